/*
 * epoch_end.c (part of the program.c unity build): what a successful epoch end (end_cooldown,
 * before anything moves) settles per registration, in one walk of the registry: the points of
 * the clients still Healthy (rewards.c) and, for those a health check dropped or verification
 * ejected, live or exited, their deposits (deposit.c) and their slashed points (rewards.c).
 *
 * The epoch took its clients from the registry in registry order and numbered them so
 * (epoch_index); the live list keeps that order, the exited one does not (clients leave it
 * round by round), so the exited forfeiters are bucketed by epoch index and merged in. Searching
 * each one's registration from the previous one's slot is then one pass over the registry; a
 * registration reused during the epoch costs a wrap-around. A wallet has one registration, and
 * paying and forfeiting touch disjoint fields (earned; deposits, held, forfeited, active,
 * slashed), so the order of the visits changes only the cost, never the result.
 */

/* The exited forfeiters by epoch index (at[e]: 1 + position in exited, 0: none); how many. */
static u64 index_exited_forfeits(const epoch_state_t *es, u16 *at) {
  mem_zero(at, MAX_CLIENTS * sizeof(u16));
  u64 count = 0;
  for (u64 i = 0; i < es->exited_len; i++) {
    const client_t *c = &es->exited[i];
    if (!forfeits(c) || c->epoch_index >= MAX_CLIENTS) continue;
    at[c->epoch_index] = (u16)(i + 1);
    count++;
  }
  return count;
}

/*
 * A client's part, its registration searched from slot `from`: a Healthy one is paid, the others
 * reach here only to forfeit (its deposit, if any, and the slashing rate, if not 0). Returns
 * where the next search starts.
 */
static u64 settle_client(account_t *a, const client_t *c, u64 from, u64 share) {
  u64 slot = find_registration(a, c->signer, from);
  if (slot == a->registry_len) return from;
  if (c->state == CS_HEALTHY) pay_registration(a, slot, share);
  else {
    forfeit_registration(a, slot);
    slash_registration(a, slot);
  }
  return slot + 1 < a->registry_len ? slot + 1 : 0;
}

static void settle_epoch(account_t *a) {
  const epoch_state_t *es = &a->epoch_state;
  u64 share = epoch_share(a);
  /* Nothing to forfeit while no deposit is held and the slashing rate is 0. */
  bool forfeiting =
      a->join_deposit.held != 0 || a->current_epoch_rates.slashing_rate_per_client != 0;
  if (share == 0 && !forfeiting) return;
  u16 exited_at[MAX_CLIENTS];
  u64 exited_left = forfeiting ? index_exited_forfeits(es, exited_at) : 0;
  u64 live = 0, e = 0, from = 0;
  for (;;) {
    while (exited_left > 0 && exited_at[e] == 0) e++;
    u64 next_exited = exited_left > 0 ? e : MAX_CLIENTS;
    /* The live clients before the next exited forfeiter, in order. */
    for (; live < es->clients_len && es->clients[live].epoch_index < next_exited; live++) {
      const client_t *c = &es->clients[live];
      if (c->state == CS_HEALTHY ? share == 0 : !forfeiting || !forfeits(c)) continue;
      from = settle_client(a, c, from, share);
    }
    if (exited_left == 0) return;
    from = settle_client(a, &es->exited[exited_at[e++] - 1u], from, share);
    exited_left--;
  }
}
