/*
 * rewards.c (part of the program.c unity build): earned points, as Psyche's Solana program
 * keeps them (solana-coordinator instance_state.rs), with two deliberate differences that
 * docs/solana-program.md ("Earned points") explains: only a successful epoch end pays, and
 * points saturate at 2^64 - 1 instead of overflowing. Slashed points follow the same two rules
 * (docs/solana-program.md, "Slashing").
 *
 * The account holds each registration's points beside the registry (earned[i] and slashed[i]
 * are registry[i]'s wallet's), the rates the current epoch pays and the rates the next epoch
 * will pay. The reference model is coordinator/solana/reference/program_model.ts.
 */

/* Wire flags of set_future_epoch_rates: which rates follow (u64 each, in this order). */
#define RATE_EARNING 1u
#define RATE_SLASHING 2u
#define RATE_ALL 3u

/* set_future_epoch_rates: a rate left out keeps its value; at least one is given. */
static u64 set_future_epoch_rates(account_t *a, reader_t *r) {
  u8 parts = get8(r);
  u64 earning = (parts & RATE_EARNING) ? get64(r) : 0;
  u64 slashing = (parts & RATE_SLASHING) ? get64(r) : 0;
  if (!r->ok || r->pos != r->len || parts == 0 || (parts & ~RATE_ALL) != 0) {
    LOG("set_future_epoch_rates: flags 1..3, then the u64 rates they name");
    return E_INVALID_INSTRUCTION;
  }
  if (parts & RATE_EARNING) a->future_epoch_rates.earning_rate_total_shared = earning;
  if (parts & RATE_SLASHING) a->future_epoch_rates.slashing_rate_per_client = slashing;
  return 0;
}

/* The epoch entering Warmup pays what the future rates say now. */
static void start_epoch_rates(account_t *a) {
  mem_copy(&a->current_epoch_rates, &a->future_epoch_rates, sizeof(epoch_rates_t));
}

/*
 * registry_len when none: the registration of `signer`, searched from slot `from` round. Not
 * inlined: settle_epoch's loop around it then keeps its state in registers (~1,000 units fewer
 * at 256 clients).
 */
static __attribute__((noinline)) u64 find_registration(const account_t *a, const u8 *signer,
                                                       u64 from) {
  u64 n = a->registry_len;
  for (u64 k = 0; k < n; k++) {
    u64 i = from + k < n ? from + k : from + k - n;
    if (same_key(a->registry[i].signer, signer)) return i;
  }
  return n;
}

/*
 * A successful epoch end pays every client of the epoch still Healthy rate / (Healthy clients),
 * the remainder unpaid: that share, 0 when nothing is paid. epoch_end.c's walk finds each
 * finisher's registration (a full registry never gives a slot of the running epoch to another
 * wallet, is_reusable in machine.c; a client found in none would simply not be paid).
 */
static u64 epoch_share(const account_t *a) {
  const epoch_state_t *es = &a->epoch_state;
  u64 finishers = 0;
  for (u64 i = 0; i < es->clients_len; i++) finishers += es->clients[i].state == CS_HEALTHY;
  return finishers == 0 ? 0 : a->current_epoch_rates.earning_rate_total_shared / finishers;
}

/* Points plus points, held at 2^64 - 1 rather than wrapping (earned and slashed alike). */
static u64 add_points(u64 points, u64 more) {
  u64 sum = points + more;
  return sum < more ? ~(u64)0 : sum;
}

/* A finisher's share onto its registration's points, saturating. */
static void pay_registration(account_t *a, u64 slot, u64 share) {
  a->earned[slot] = add_points(a->earned[slot], share);
}

/*
 * A client a health check dropped or verification ejected (deposit.c forfeits): the current
 * epoch's slashing rate onto its registration's slashed points, saturating, as Psyche's
 * `slashed += slashing_rate_per_client`. Informational: nothing is taken from earned.
 */
static void slash_registration(account_t *a, u64 slot) {
  u64 rate = a->current_epoch_rates.slashing_rate_per_client;
  a->slashed[slot] = add_points(a->slashed[slot], rate);
}
