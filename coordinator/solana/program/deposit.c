/*
 * deposit.c (part of the program.c unity build): the optional join deposit, a price on sybils
 * (docs/solana-program.md, "Join deposit").
 *
 * The main authority sets an amount of an SPL token and a vault: a token account owned by the
 * vault authority PDA("join_deposit", coordinator key). A join whose registration holds no
 * deposit then moves the amount from the signer's token account to the vault (SPL Token
 * Transfer by CPI, signed by the joiner), and the registration holds it while it joins epoch after
 * epoch. A successful epoch end forfeits the deposits of the epoch's clients that a health check
 * dropped or verification ejected (they stay in the vault, counted as forfeited, until the main
 * authority sweeps them); the others withdraw theirs once they are neither in the running epoch
 * nor pending for the next one. The reference model is
 * coordinator/solana/reference/program_model.ts.
 *
 * The CPIs need the runtime's SolAccountInfo structs (sol_cpi.h), so the deposit instructions
 * parse the raw input a second time; nothing here runs while the deposit is off.
 */

static const u8 DEPOSIT_SEED[12] = {'j', 'o', 'i', 'n', '_', 'd', 'e', 'p', 'o', 's', 'i', 't'};

/* Accounts of the deposit instructions after the coordinator (0) and the signer (1). */
#define DEPOSIT_TOKEN_ACCOUNT 2 /* the signer's (join, withdraw) or the sweep's destination */
#define DEPOSIT_VAULT 3
#define DEPOSIT_TOKEN_PROGRAM 4
#define DEPOSIT_VAULT_AUTHORITY 5
#define DEPOSIT_JOIN_ACCOUNTS 5
#define DEPOSIT_PAYOUT_ACCOUNTS 6

/*
 * set_join_deposit: amount u64; accounts: coordinator, main authority, vault. The vault must be
 * an initialized, unfrozen token account of the Token program owned by the vault authority PDA,
 * with no delegate, close authority or native balance; its mint becomes the deposit's. Another
 * vault than the current one only while the current one owes nothing. Any run state: the amount
 * applies to joins from now on (registrations keep what they hold); 0 turns the deposit off.
 */
static u64 set_join_deposit(const input_t *in, account_t *a, reader_t *r) {
  u64 amount = get64(r);
  if (!r->ok || r->pos != r->len) return E_INVALID_INSTRUCTION;
  if (in->num_accounts < 3) return E_NOT_ENOUGH_ACCOUNTS;
  const account_info_t *vault = &in->accounts[2];
  join_deposit_t *d = &a->join_deposit;
  if (!mem_eq(vault->key, d->vault, 32) && (d->held != 0 || d->forfeited != 0)) {
    LOG("set_join_deposit: the current vault still owes deposits");
    return E_DEPOSIT_VAULT_IN_USE;
  }
  SolSignerSeed seeds[2] = {{DEPOSIT_SEED, sizeof(DEPOSIT_SEED)}, {in->accounts[0].key, 32}};
  SolPubkey pda;
  u8 bump;
  if (sol_try_find_program_address(seeds, 2, (const SolPubkey *)in->program_id, &pda, &bump) != 0)
    return E_INVALID_DEPOSIT_ACCOUNTS;
  const u8 *t = vault->data;
  if (!mem_eq(vault->owner, SPL_TOKEN_PROGRAM_ID, 32) || vault->data_len != TOKEN_ACCOUNT_BYTES ||
      t[TOKEN_STATE] != TOKEN_STATE_INITIALIZED || !mem_eq(t + TOKEN_OWNER, pda.bytes, 32) ||
      rd32(t + TOKEN_DELEGATE_TAG) != 0 || rd32(t + TOKEN_IS_NATIVE_TAG) != 0 ||
      rd32(t + TOKEN_CLOSE_AUTHORITY_TAG) != 0) {
    LOG("set_join_deposit: the vault must be a plain token account owned by the vault authority");
    return E_INVALID_DEPOSIT_ACCOUNTS;
  }
  d->amount = amount;
  mem_copy(d->mint, t + TOKEN_MINT, 32);
  mem_copy(d->vault, vault->key, 32);
  d->vault_authority_bump = bump;
  return 0;
}

/* Whether join_run must take a deposit for registration `slot` (registry_len: a new one). */
static bool deposit_due(const account_t *a, u64 slot, const u8 *user) {
  if (a->join_deposit.amount == 0) return false;
  return slot == a->registry_len || !same_key(a->registry[slot].signer, user) ||
         a->deposits[slot] == 0;
}

/*
 * join_run's deposit: accounts 2..4 are the signer's token account, the vault and the Token
 * program; Transfer signed by the joiner. Only checks and the transfer: the caller records it.
 */
static __attribute__((noinline)) u64 take_deposit(const u8 *raw, const account_t *a) {
  SolAccountInfo infos[DEPOSIT_JOIN_ACCOUNTS];
  sol_parsed_t p;
  sol_parse_accounts(raw, infos, DEPOSIT_JOIN_ACCOUNTS, &p);
  if (p.num_accounts < DEPOSIT_JOIN_ACCOUNTS) {
    LOG("join: the run requires a deposit: pass the token account, the vault and SPL Token");
    return E_DEPOSIT_REQUIRED;
  }
  const join_deposit_t *d = &a->join_deposit;
  SolAccountInfo *from = &infos[DEPOSIT_TOKEN_ACCOUNT], *vault = &infos[DEPOSIT_VAULT];
  if (!mem_eq(vault->key->bytes, d->vault, 32) || !is_token_program(&infos[DEPOSIT_TOKEN_PROGRAM]))
    return E_INVALID_DEPOSIT_ACCOUNTS;
  if (!is_token_account(from, d->mint, infos[1].key->bytes) || token_amount(from) < d->amount) {
    LOG("join: the token account is not the signer's of the deposit's mint, or holds too little");
    return E_INSUFFICIENT_DEPOSIT;
  }
  token_transfer_t t = {from->key, vault->key, infos[1].key, d->amount};
  return token_transfer(&t, infos, DEPOSIT_JOIN_ACCOUNTS, NULL);
}

/* Transfer of `amount` from the vault to account 2, signed by the vault authority PDA. */
static __attribute__((noinline)) u64 pay_from_vault(const u8 *raw, const account_t *a,
                                                    u64 amount) {
  SolAccountInfo infos[DEPOSIT_PAYOUT_ACCOUNTS];
  sol_parsed_t p;
  sol_parse_accounts(raw, infos, DEPOSIT_PAYOUT_ACCOUNTS, &p);
  if (p.num_accounts < DEPOSIT_PAYOUT_ACCOUNTS) return E_NOT_ENOUGH_ACCOUNTS;
  const join_deposit_t *d = &a->join_deposit;
  SolAccountInfo *vault = &infos[DEPOSIT_VAULT], *authority = &infos[DEPOSIT_VAULT_AUTHORITY];
  SolSignerSeed seeds[3] = {{DEPOSIT_SEED, sizeof(DEPOSIT_SEED)},
                            {infos[0].key->bytes, 32},
                            {&d->vault_authority_bump, 1}};
  SolPubkey expected;
  if (!mem_eq(vault->key->bytes, d->vault, 32) || !is_token_program(&infos[DEPOSIT_TOKEN_PROGRAM]) ||
      sol_create_program_address(seeds, 3, p.program_id, &expected) != 0 ||
      !key_eq(&expected, authority->key)) {
    LOG("deposit: not the run's vault, SPL Token, or the vault authority");
    return E_INVALID_DEPOSIT_ACCOUNTS;
  }
  SolSignerSeeds signer = {seeds, 3};
  token_transfer_t t = {vault->key, infos[DEPOSIT_TOKEN_ACCOUNT].key, authority->key, amount};
  return token_transfer(&t, infos, DEPOSIT_PAYOUT_ACCOUNTS, &signer);
}

/* Whether the epoch the registration joined is running (Warmup through Cooldown). */
static bool in_running_epoch(const account_t *a, u64 slot) {
  u8 s = a->run_state;
  bool live = s == RS_WARMUP || s == RS_ROUND_TRAIN || s == RS_ROUND_WITNESS || s == RS_COOLDOWN;
  return live && a->registry[slot].active + 1 == a->next_active;
}

/*
 * The signer's registration for withdraw_deposit: the slot the instruction names when it is the
 * signer's, else (no hint, a stale or wrong one) a search from slot 0. A hint only saves the
 * search (~16,000 units at 256 registrations), so one that names another wallet's registration
 * is not an error: the result is the same either way.
 */
static u64 hinted_registration(const account_t *a, const u8 *user, reader_t *r) {
  if (r->pos == r->len) return find_registration(a, user, 0);
  u64 hint = get16(r);
  if (hint < a->registry_len && same_key(a->registry[hint].signer, user)) return hint;
  return find_registration(a, user, 0);
}

/*
 * withdraw_deposit: data: nothing, or the signer's registry slot (u16) as a hint; accounts:
 * coordinator, the depositor (signs), its token account (any of the mint), the vault, SPL Token,
 * the vault authority. Pays the whole deposit the signer's registration holds, once: the
 * registration then holds none.
 */
static u64 withdraw_deposit(const u8 *raw, account_t *a, const u8 *user, reader_t *r) {
  if (r->len - r->pos != 0 && r->len - r->pos != 2) {
    LOG("withdraw_deposit: data: nothing, or the signer's registry slot (u16)");
    return E_INVALID_INSTRUCTION;
  }
  u64 slot = hinted_registration(a, user, r);
  if (slot == a->registry_len || a->deposits[slot] == 0) return E_NO_DEPOSIT;
  if (is_pending(a, slot) || in_running_epoch(a, slot)) {
    LOG("withdraw_deposit: pending for the next epoch or in the running one");
    return E_DEPOSIT_LOCKED;
  }
  u64 amount = a->deposits[slot], err;
  if ((err = pay_from_vault(raw, a, amount))) return err;
  a->deposits[slot] = 0;
  a->join_deposit.held -= amount;
  return 0;
}

/* sweep_forfeited (main authority): the forfeited deposits to account 2, a token account. */
static u64 sweep_forfeited(const u8 *raw, account_t *a) {
  u64 amount = a->join_deposit.forfeited, err;
  if (amount == 0) return E_NO_DEPOSIT;
  if ((err = pay_from_vault(raw, a, amount))) return err;
  a->join_deposit.forfeited = 0;
  return 0;
}

/*
 * Whether a client of a successfully ended epoch, live or exited, forfeits the deposit its
 * wallet's registration holds: a health check dropped it or verification ejected it. The same
 * clients are slashed (rewards.c slash_registration), deposit or not.
 */
static bool forfeits(const client_t *c) { return c->state == CS_DROPPED || c->state == CS_EJECTED; }

/*
 * A forfeiting client's registration (found by epoch_end.c's walk): the deposit moves from held
 * to forfeited, and a join made for the next epoch is cancelled, so it pays again to train again.
 */
static void forfeit_registration(account_t *a, u64 slot) {
  u64 held = a->deposits[slot];
  if (held == 0) return;
  a->join_deposit.held -= held;
  a->join_deposit.forfeited += held;
  a->deposits[slot] = 0;
  if (is_pending(a, slot)) a->registry[slot].active = a->next_active - 1;
}
