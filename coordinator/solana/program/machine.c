/*
 * machine.c (part of the program.c unity build): the coordinator state machine on the
 * account, transition for transition the same as the TypeScript reference
 * (coordinator/core/machine.ts, machine_core.ts, machine_witness.ts, machine_membership.ts,
 * machine_cooldown.ts, health.ts, checkpoint_lifecycle.ts). Every function either returns 0 after mutating
 * the account or an error code; on an error the runtime discards all account changes.
 */

/* verification.c, included after this file (it uses the queries below). */
#define BAR_FILTER_BYTES 512
/* The bars on the epoch about to start: the epoch they are measured against, and a prefilter. */
typedef struct {
  u64 epoch;
  u8 filter[BAR_FILTER_BYTES];
} bars_t;
static u64 bar_filter(const account_t *a, bars_t *bars);
static bool is_barred(const account_t *a, const bars_t *bars, const u8 *signer);
static void open_verification_tasks(account_t *a, u64 now);
static void close_verification_stages(account_t *a, u64 ended_height, u64 now, u64 seed);
static void eject_idle_witnesses(account_t *a, const round_t *round);
static void drop_verification_tasks(account_t *a);
/* rewards.c and epoch_end.c, included after this file. */
static void start_epoch_rates(account_t *a);
static void settle_epoch(account_t *a);

/* 64 x 64 -> 128-bit product. */
static void mul_64(u64 a, u64 b, u64 *hi, u64 *lo) {
  u64 a0 = a & 0xffffffffull, a1 = a >> 32, b0 = b & 0xffffffffull, b1 = b >> 32;
  u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  u64 mid = (p00 >> 32) + (p01 & 0xffffffffull) + (p10 & 0xffffffffull);
  *lo = (p00 & 0xffffffffull) | (mid << 32);
  *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* (hi:lo) / d for hi < d (the quotient fits in 64 bits). */
static u64 div_128(u64 hi, u64 lo, u64 d) {
  u64 q = 0, r = hi;
  for (int i = 63; i >= 0; i--) {
    u64 carry = r >> 63;
    r = (r << 1) | ((lo >> i) & 1);
    q <<= 1;
    if (carry || r >= d) {
      r -= d;
      q |= 1;
    }
  }
  return q;
}

/*
 * data_selection.ts batchSizeForTokens at tokens = data_index * max_seq_len:
 * end once tokens >= W, else start + floor((2 (end - start) tokens + W) / 2W).
 */
static u64 batch_size_at(const account_t *a, u64 data_index) {
  const config_t *c = &a->config;
  u64 th, tl;
  mul_64(data_index, a->model.max_seq_len, &th, &tl);
  u64 w = c->global_batch_size_warmup_tokens;
  if (th != 0 || tl >= w) return c->global_batch_size_end;
  u64 d = (u64)c->global_batch_size_end - c->global_batch_size_start;
  u64 h, l;
  mul_64(2 * d, tl, &h, &l);
  u64 l2 = l + w;
  if (l2 < l) h++;
  return c->global_batch_size_start + div_128(h, l2, 2 * w);
}

static bool is_halted(const account_t *a) {
  return a->run_state == RS_UNINITIALIZED || a->run_state == RS_PAUSED ||
         a->run_state == RS_FINISHED;
}

static bool check_timeout(const account_t *a, u64 now, u64 duration) {
  u64 start = a->run_state_start_unix_timestamp;
  return start != now && now >= start + duration;
}

static bool check_epoch_timeout(const account_t *a, u64 now) {
  u64 start = a->epoch_state.start_timestamp;
  return start != now && now >= start + a->config.epoch_time;
}

static void change_state(account_t *a, u8 to, u64 now) {
  a->run_state = to;
  a->run_state_start_unix_timestamp = now;
}

static u8 state_after_epoch(const account_t *a) {
  return a->step >= a->config.total_steps ? RS_FINISHED : RS_WAITING_FOR_MEMBERS;
}

static round_t *current_round(account_t *a) {
  return &a->epoch_state.rounds[a->epoch_state.rounds_head];
}

/* The round of this epoch with `height` if still in the ring buffer, else NULL. */
static round_t *round_by_height(account_t *a, u64 height) {
  epoch_state_t *es = &a->epoch_state;
  u64 head_height = es->rounds[es->rounds_head].height;
  if (height > head_height) return NULL;
  u64 back = head_height - height;
  if (back >= NUM_ROUNDS) return NULL;
  round_t *r = &es->rounds[(es->rounds_head + NUM_ROUNDS - back) % NUM_ROUNDS];
  return r->height == height ? r : NULL;
}

static round_t *previous_round(account_t *a) {
  u64 h = current_round(a)->height;
  return h == 0 ? NULL : round_by_height(a, h - 1);
}

static bool same_key(const u8 *x, const u8 *y) {
  /* Keys in the account are 8-byte aligned; compare the first word before the rest. */
  return rd64(x) == rd64(y) && mem_eq(x + 8, y + 8, 24);
}

static void copy_client(client_t *dst, const client_t *src) { mem_copy(dst, src, sizeof(client_t)); }

/* Moves every client that is not Healthy to the exited list with exited_height = height. */
static u64 move_clients_to_exited(account_t *a, u32 height) {
  epoch_state_t *es = &a->epoch_state;
  u64 kept = 0, moved = 0;
  for (u64 i = 0; i < es->clients_len; i++) {
    client_t *c = &es->clients[i];
    if (c->state == CS_HEALTHY) {
      if (kept != i) copy_client(&es->clients[kept], c);
      kept++;
    } else {
      c->exited_height = height;
      copy_client(&es->exited[es->exited_len++], c);
      moved++;
    }
  }
  for (u64 i = kept; i < es->clients_len; i++) mem_zero(&es->clients[i], sizeof(client_t));
  es->clients_len = (u16)kept;
  return moved;
}

static void mark_all_healthy(account_t *a, u8 to) {
  epoch_state_t *es = &a->epoch_state;
  for (u64 i = 0; i < es->clients_len; i++)
    if (es->clients[i].state == CS_HEALTHY) es->clients[i].state = to;
}

static void start_round_train(account_t *a, u64 now, u64 seed) {
  epoch_state_t *es = &a->epoch_state;
  u64 head = 0, height = 0, data_index = a->epoch_start_data_index;
  if (!es->first_round) {
    round_t *prev = &es->rounds[es->rounds_head];
    head = (es->rounds_head + 1) % NUM_ROUNDS;
    height = (u64)prev->height + 1;
    data_index = prev->data_index + batch_size_at(a, prev->data_index);
  }
  round_t *r = &es->rounds[head];
  mem_zero(r, sizeof(round_t));
  r->data_index = data_index;
  r->random_seed = seed;
  r->height = (u32)height;
  r->clients_len = es->clients_len;
  es->rounds_head = (u8)head;
  change_state(a, RS_ROUND_TRAIN, now);
}

/* params_digest.ts: votes are kept per phase; all-zero digests are no vote. */
static void add_digest_vote(account_t *a, u64 index, const u8 *digest) {
  if (is_zero(digest, DIGEST_BYTES)) return;
  digest_vote_t *v = &a->digest_votes[a->digest_votes_len++];
  v->index = (u16)index;
  mem_copy(v->digest, digest, DIGEST_BYTES);
}

/* params_digest.ts recordDigest: steps only grow; the oldest record falls out past the cap. */
static void record_digest(account_t *a, u32 step, const u8 *digest) {
  u64 n = a->digest_records_len;
  if (n > 0 && a->digest_records[n - 1].step >= step) return;
  if (n == NUM_DIGEST_RECORDS) {
    for (u64 i = 1; i < n; i++) a->digest_records[i - 1] = a->digest_records[i];
    n--;
  }
  a->digest_records[n].step = step;
  mem_copy(a->digest_records[n].digest, digest, DIGEST_BYTES);
  a->digest_records_len = (u8)(n + 1);
}

/*
 * params_digest.ts digestConsensus: whether the digest with the most votes has at least `quorum`
 * and more than any other (its vote's index in `*winner_out`).
 */
static bool digest_consensus(const account_t *a, u64 quorum, u64 *winner_out) {
  u64 n = a->digest_votes_len, best = 0, winner = 0;
  bool tied = false;
  for (u64 i = 0; i < n; i++) {
    u64 count = 0;
    for (u64 j = 0; j < n; j++)
      if (mem_eq(a->digest_votes[i].digest, a->digest_votes[j].digest, DIGEST_BYTES)) count++;
    if (count > best) {
      best = count;
      winner = i;
      tied = false;
    } else if (count == best && !mem_eq(a->digest_votes[i].digest, a->digest_votes[winner].digest, DIGEST_BYTES)) {
      tied = true;
    }
  }
  *winner_out = winner;
  return n > 0 && !tied && best >= quorum;
}

/*
 * params_digest.ts tallyDigestVotes: the consensus digest, if any, is recorded for the current
 * step; the votes are cleared.
 */
static void tally_digest_votes(account_t *a, u64 quorum) {
  u64 winner;
  if (digest_consensus(a, quorum, &winner)) record_digest(a, a->step, a->digest_votes[winner].digest);
  mem_zero(a->digest_votes, sizeof(a->digest_votes));
  a->digest_votes_len = 0;
}

static void leave_warmup(account_t *a, u64 now, u64 seed) {
  move_clients_to_exited(a, 0);
  tally_digest_votes(a, witness_quorum(expected_witnesses(&a->config, a->epoch_state.clients_len)));
  if (a->epoch_state.clients_len < a->config.min_clients) {
    change_state(a, state_after_epoch(a), now);
    return;
  }
  start_round_train(a, now, seed);
}

/* checkpoint_lifecycle.ts checkpointWithoutReturningPeers / checkpointAfterCooldown. */
static void checkpoint_without_returning_peers(checkpoint_t *c) {
  if (c->kind == CK_P2P) c->kind = CK_HUB;
  else if (c->kind == CK_P2PGCS) c->kind = CK_GCS;
}
static void checkpoint_after_cooldown(checkpoint_t *c) {
  if (c->kind == CK_HUB || c->kind == CK_DUMMY) c->kind = CK_P2P;
  else if (c->kind == CK_GCS) c->kind = CK_P2PGCS;
}

static bool is_pending(const account_t *a, u64 i) { return a->registry[i].active == a->next_active; }

/*
 * Whether a full registry may give slot i to a new wallet: its wallet joined neither the next
 * epoch nor the running one (whose payout looks it up by wallet), and it holds no earned points,
 * no slashed points and no deposit, which a reuse would destroy.
 */
static bool is_reusable(const account_t *a, u64 i) {
  return a->registry[i].active + 1 < a->next_active && a->earned[i] == 0 &&
         a->deposits[i] == 0 && a->slashed[i] == 0;
}

static u64 pending_count(const account_t *a) {
  u64 n = 0;
  for (u64 i = 0; i < a->registry_len; i++)
    if (is_pending(a, i)) n++;
  return n;
}

/*
 * The pending registrations an epoch may take, in registry order: those no ejection record bars
 * (verification.ts barredUntil; `bars` from bar_filter, NULL when none bars anyone).
 */
static bool is_eligible(const account_t *a, u64 i, const bars_t *bars) {
  return is_pending(a, i) && (bars == NULL || !is_barred(a, bars, a->registry[i].signer));
}

static u64 eligible_count(const account_t *a, const bars_t *bars) {
  if (bars == NULL) return pending_count(a);
  u64 n = 0;
  for (u64 i = 0; i < a->registry_len; i++)
    if (is_eligible(a, i, bars)) n++;
  return n;
}

/* Whether a Healthy client of the epoch that just ended is among the first `take` eligible. */
static bool any_returning(account_t *a, u64 take, const bars_t *bars) {
  epoch_state_t *es = &a->epoch_state;
  u8 filter[512]; /* 4096-bit prefilter on 12 bits of the signer */
  mem_zero(filter, sizeof(filter));
  u64 healthy = 0;
  for (u64 i = 0; i < es->clients_len; i++) {
    if (es->clients[i].state != CS_HEALTHY) continue;
    u64 h = rd16(es->clients[i].signer) & 0xfff;
    filter[h >> 3] |= (u8)(1u << (h & 7));
    healthy++;
  }
  if (healthy == 0) return false;
  u64 seen = 0;
  for (u64 i = 0; i < a->registry_len && seen < take; i++) {
    if (!is_eligible(a, i, bars)) continue;
    seen++;
    const u8 *s = a->registry[i].signer;
    u64 h = rd16(s) & 0xfff;
    if ((filter[h >> 3] & (1u << (h & 7))) == 0) continue;
    for (u64 j = 0; j < es->clients_len; j++)
      if (es->clients[j].state == CS_HEALTHY && same_key(es->clients[j].signer, s)) return true;
  }
  return false;
}

/*
 * verification.ts barEpoch: the epoch about to start, plus one per whole epoch_time the run has
 * waited in WaitingForMembers, so no bar holds a run forever.
 */
static u64 bar_epoch(const account_t *a, u64 now) {
  u64 start = a->run_state_start_unix_timestamp;
  if (a->run_state != RS_WAITING_FOR_MEMBERS || now <= start || a->config.epoch_time == 0)
    return a->epoch;
  return a->epoch + (now - start) / a->config.epoch_time;
}

/*
 * machine.ts tickWaitingForMembers with the registry's pending clients; a signer an ejection
 * still bars (at bar_epoch) neither counts towards initMinClients nor joins.
 */
static void tick_waiting_for_members(account_t *a, u64 now) {
  bars_t bar_state;
  bar_state.epoch = bar_epoch(a, now);
  const bars_t *bars = bar_filter(a, &bar_state) > 0 ? &bar_state : NULL;
  u64 pending = eligible_count(a, bars);
  if (pending < a->config.init_min_clients) return;
  if (!check_timeout(a, now, a->config.waiting_for_members_extra_time)) return;
  u64 take = pending < a->config.max_clients ? pending : a->config.max_clients;
  if (!any_returning(a, take, bars)) checkpoint_without_returning_peers(&a->model.checkpoint);
  /* A bar the wait served is served for good, not again in the next epochs. */
  for (u64 i = 0; i < a->ejections_len; i++) {
    ejection_t *r = &a->ejections[i];
    if (r->barred_until > a->epoch && r->barred_until <= bar_state.epoch) r->barred_until = a->epoch;
  }
  epoch_state_t *es = &a->epoch_state;
  u8 cold = es->cold_start_epoch;
  mem_zero(es, sizeof(epoch_state_t));
  mem_zero(a->digest_votes, sizeof(a->digest_votes));
  a->digest_votes_len = 0;
  es->cold_start_epoch = cold;
  es->first_round = 1;
  es->start_step = a->step;
  es->start_timestamp = now;
  u64 n = 0;
  for (u64 i = 0; i < a->registry_len && n < take; i++) {
    if (!is_eligible(a, i, bars)) continue;
    client_t *c = &es->clients[n];
    mem_copy(c->signer, a->registry[i].signer, 32);
    mem_copy(c->p2p, a->registry[i].p2p, 32);
    c->state = CS_HEALTHY;
    c->epoch_index = (u16)n;
    n++;
  }
  es->clients_len = (u16)n;
  /* Everyone joins again for the next epoch. */
  a->next_active++;
  start_epoch_rates(a);
  change_state(a, RS_WARMUP, now);
}

static void tick_warmup(account_t *a, u64 now, u64 seed) {
  if (check_timeout(a, now, a->config.warmup_time)) {
    leave_warmup(a, now, seed);
    return;
  }
  move_clients_to_exited(a, 0);
  if (a->epoch_state.clients_len < a->config.min_clients) change_state(a, state_after_epoch(a), now);
}

/* Rounds an epoch runs at least before the epoch timer may wind it down. */
#define MIN_ROUNDS_PER_EPOCH NUM_ROUNDS

static void tick_round_witness(account_t *a, u64 now, u64 seed) {
  epoch_state_t *es = &a->epoch_state;
  const config_t *c = &a->config;
  round_t *round = current_round(a);
  /* machine_queries.ts roundWitnessWindow: nothing to wait for once every expected witness
     reported, unless the run verifies (its verifiers need the rounds' pace). */
  bool all = round->witnesses_len >= expected_witnesses(c, round->clients_len) &&
             c->verification_percent == 0;
  u64 window = all ? 0 : c->round_witness_time;
  if (!check_timeout(a, now, window)) return;
  /* Verification stages due now close first, and idle witnesses are found: whom they eject
     leaves with this round. */
  close_verification_stages(a, round->height, now, seed);
  eject_idle_witnesses(a, round);
  tally_digest_votes(a, witness_quorum(expected_witnesses(c, round->clients_len)));
  es->first_round = 0;
  a->step++;
  move_clients_to_exited(a, round->height + 1);
  u64 num_witnesses = round->witnesses_len;
  if (num_witnesses == 0) {
    mark_all_healthy(a, CS_WITHDRAWN);
    change_state(a, RS_COOLDOWN, now);
    return;
  }
  if (es->last_step == 0 && check_epoch_timeout(a, now)) {
    u64 last = (u64)a->step + 2;
    if (last - es->start_step >= MIN_ROUNDS_PER_EPOCH) es->last_step = (u32)last;
  }
  bool wind_down_done = es->last_step != 0 && a->step == es->last_step;
  bool must_stop = es->clients_len < c->min_clients ||
                   num_witnesses < witness_quorum(expected_witnesses(c, round->clients_len)) ||
                   a->step >= c->total_steps || a->pending_pause;
  if (wind_down_done || must_stop) {
    change_state(a, RS_COOLDOWN, now);
    return;
  }
  start_round_train(a, now, seed);
  open_verification_tasks(a, now);
}

/* machine_cooldown.ts endCooldown: the timer fired, or a checkpointer reported. */
static void end_cooldown(account_t *a, u64 now) {
  settle_epoch(a);
  round_t *round = current_round(a);
  tally_digest_votes(a, witness_quorum(expected_witnesses(&a->config, round->clients_len)));
  epoch_state_t *es = &a->epoch_state;
  a->epoch_start_data_index = round->data_index + batch_size_at(a, round->data_index);
  a->epoch++;
  move_clients_to_exited(a, round->height + 1);
  drop_verification_tasks(a);
  checkpoint_after_cooldown(&a->model.checkpoint);
  if (a->pending_pause) {
    mark_all_healthy(a, CS_WITHDRAWN);
    a->pending_pause = 0;
    es->cold_start_epoch = 1;
    change_state(a, RS_PAUSED, now);
  } else {
    es->cold_start_epoch = 0;
    change_state(a, state_after_epoch(a), now);
  }
}

static void tick_cooldown(account_t *a, u64 now) {
  if (check_timeout(a, now, a->config.cooldown_time)) end_cooldown(a, now);
}

/* machine.ts tick, with the pending list taken from the registry. */
static u64 tick(account_t *a, u64 now, u64 seed) {
  switch (a->run_state) {
  case RS_WAITING_FOR_MEMBERS:
    tick_waiting_for_members(a, now);
    return 0;
  case RS_WARMUP:
    tick_warmup(a, now, seed);
    return 0;
  case RS_ROUND_TRAIN:
    if (check_timeout(a, now, a->config.max_round_train_time)) change_state(a, RS_ROUND_WITNESS, now);
    return 0;
  case RS_ROUND_WITNESS:
    tick_round_witness(a, now, seed);
    return 0;
  case RS_COOLDOWN:
    tick_cooldown(a, now);
    return 0;
  default:
    LOG("tick: the run is halted");
    return E_HALTED;
  }
}

/* A witness as the instruction carries it (state-encoding Witness, blooms with k and m). */
typedef struct {
  u32 position;
  u32 index;
  u8 witness;
  u8 participant_keys;
  u8 broadcast_keys;
  u32 participant_bits;
  u32 broadcast_bits;
  const u8 *participant; /* keys then bits */
  const u8 *broadcast;
  const u8 *merkle;
  const u8 *digest; /* DIGEST_BYTES; all zero: no vote */
} witness_msg_t;

static u64 check_witness_shape(const account_t *a, const witness_msg_t *w) {
  u64 bits, keys;
  bloom_params(a->config.max_clients, &bits, &keys);
  if (w->participant_keys != keys || w->participant_bits != bits || w->broadcast_keys != keys ||
      w->broadcast_bits != bits) {
    LOG("witness: blooms are not sized for the run's maxClients");
    sol_log_64_(w->participant_keys, w->participant_bits, keys, bits, a->config.max_clients);
    return E_INVALID_WITNESS;
  }
  return 0;
}

static u64 check_sender(account_t *a, const u8 *from, u64 index) {
  epoch_state_t *es = &a->epoch_state;
  if (index >= es->clients_len) {
    LOG("witness: proof index is out of range");
    return E_INVALID_WITNESS;
  }
  if (!same_key(es->clients[index].signer, from)) {
    LOG("witness: proof index belongs to another client");
    return E_INVALID_WITNESS;
  }
  return 0;
}

static u64 check_room(const round_t *r, u64 index) {
  for (u64 i = 0; i < r->witnesses_len; i++)
    if (r->witnesses[i].index == index) return E_DUPLICATE_WITNESS;
  if (r->witnesses_len >= MAX_WITNESSES) return E_WITNESSES_FULL;
  return 0;
}

static void push_witness(round_t *r, const witness_msg_t *w, u64 keys, u64 bits) {
  witness_t *dst = &r->witnesses[r->witnesses_len++];
  mem_zero(dst, sizeof(witness_t));
  dst->position = w->position;
  dst->index = w->index;
  dst->witness = w->witness;
  mem_copy(dst->participant.keys, w->participant, keys * 8);
  mem_copy(dst->participant.bits, w->participant + keys * 8, bits / 8);
  mem_copy(dst->broadcast.keys, w->broadcast, keys * 8);
  mem_copy(dst->broadcast.bits, w->broadcast + keys * 8, bits / 8);
  mem_copy(dst->merkle, w->merkle, 32);
}

/* machine_witness.ts warmupWitness. */
static u64 warmup_witness(account_t *a, const u8 *from, const witness_msg_t *w, u64 now, u64 seed) {
  if (is_halted(a)) return E_HALTED;
  if (a->run_state == RS_ROUND_TRAIN) return 0;
  if (a->run_state != RS_WARMUP) return E_WRONG_RUN_STATE;
  u64 err = check_witness_shape(a, w);
  if (err) return err;
  if ((err = check_sender(a, from, w->index))) return err;
  if (w->position != w->index) {
    LOG("warmup witness: position must equal index");
    return E_INVALID_WITNESS;
  }
  epoch_state_t *es = &a->epoch_state;
  if (es->clients[w->index].state != CS_HEALTHY) return E_INVALID_WITNESS;
  round_t *r = current_round(a);
  if ((err = check_room(r, w->index))) return err;
  u64 bits, keys;
  bloom_params(a->config.max_clients, &bits, &keys);
  push_witness(r, w, keys, bits);
  add_digest_vote(a, w->index, w->digest);
  if (r->witnesses_len >= expected_witnesses(&a->config, es->clients_len)) leave_warmup(a, now, seed);
  return 0;
}

/* machine_witness.ts witness. */
static u64 witness(account_t *a, const u8 *from, const witness_msg_t *w, u64 now) {
  if (is_halted(a)) return E_HALTED;
  if (a->run_state != RS_ROUND_TRAIN && a->run_state != RS_ROUND_WITNESS) return E_WRONG_RUN_STATE;
  u64 err = check_witness_shape(a, w);
  if (err) return err;
  if (!w->witness) {
    LOG("witness: the proof claims no witness seat");
    return E_INVALID_WITNESS;
  }
  round_t *r = current_round(a);
  if (!verify_witness_proof(&a->config, r, w->index, w->position, true)) {
    LOG("witness: proof does not verify for the current round");
    return E_INVALID_COMMITTEE_PROOF;
  }
  if ((err = check_sender(a, from, w->index))) return err;
  if ((err = check_room(r, w->index))) return err;
  u64 bits, keys;
  bloom_params(a->config.max_clients, &bits, &keys);
  push_witness(r, w, keys, bits);
  add_digest_vote(a, w->index, w->digest);
  /* A quorum ends RoundTrain; the other witnesses report during RoundWitness. */
  if (a->run_state == RS_ROUND_TRAIN &&
      r->witnesses_len >= witness_quorum(expected_witnesses(&a->config, r->clients_len)))
    change_state(a, RS_ROUND_WITNESS, now);
  return 0;
}

/*
 * machine_queries.ts roundClients(height)[index]: the clients still in the epoch plus
 * those that left after round `height`, in epoch-index order.
 */
static const client_t *round_client(account_t *a, u64 height, u64 index) {
  epoch_state_t *es = &a->epoch_state;
  u8 present[MAX_CLIENTS / 8];
  mem_zero(present, sizeof(present));
  u64 gone = 0;
  for (u64 i = 0; i < es->clients_len; i++) {
    u64 e = es->clients[i].epoch_index;
    present[e >> 3] |= (u8)(1u << (e & 7));
  }
  for (u64 i = 0; i < es->exited_len; i++) {
    if (es->exited[i].exited_height <= height) continue;
    u64 e = es->exited[i].epoch_index;
    present[e >> 3] |= (u8)(1u << (e & 7));
    gone++;
  }
  if (gone == 0) return index < es->clients_len ? &es->clients[index] : NULL;
  u64 seen = 0;
  for (u64 e = 0; e < MAX_CLIENTS; e++) {
    if ((present[e >> 3] & (1u << (e & 7))) == 0) continue;
    if (seen++ != index) continue;
    for (u64 i = 0; i < es->clients_len; i++)
      if (es->clients[i].epoch_index == e) return &es->clients[i];
    for (u64 i = 0; i < es->exited_len; i++)
      if (es->exited[i].epoch_index == e && es->exited[i].exited_height > height) return &es->exited[i];
  }
  return NULL;
}

/* machine_witness.ts cooldownWitness: a witness of the last round reports the next start. */
typedef struct {
  u32 position;
  u32 index;
  u8 witness;
  const u8 *digest;
} cooldown_msg_t;

static u64 cooldown_witness(account_t *a, const u8 *from, const cooldown_msg_t *m) {
  u64 position = m->position, index = m->index;
  const u8 *digest = m->digest;
  if (is_halted(a)) return E_HALTED;
  if (a->run_state != RS_COOLDOWN) return E_WRONG_RUN_STATE;
  if (is_zero(digest, DIGEST_BYTES)) {
    LOG("cooldown witness: a cooldown witness must carry a digest");
    return E_INVALID_WITNESS;
  }
  if (!m->witness) {
    LOG("cooldown witness: the proof claims no witness seat");
    return E_INVALID_WITNESS;
  }
  round_t *r = current_round(a);
  if (!verify_witness_proof(&a->config, r, index, position, true)) {
    LOG("cooldown witness: proof does not verify for the last round");
    return E_INVALID_COMMITTEE_PROOF;
  }
  const client_t *voter = round_client(a, r->height, index);
  if (voter == NULL || !same_key(voter->signer, from) || voter->state != CS_HEALTHY) {
    LOG("cooldown witness: the proof is not the sender's, or the sender left");
    return E_INVALID_WITNESS;
  }
  for (u64 i = 0; i < a->digest_votes_len; i++)
    if (a->digest_votes[i].index == index) return E_DUPLICATE_WITNESS;
  if (a->digest_votes_len >= MAX_WITNESSES) return E_WITNESSES_FULL;
  add_digest_vote(a, index, digest);
  return 0;
}

/* health.ts trainerHealthy: a quorum of the previous round's witnesses saw the signer. */
static bool trainer_healthy(account_t *a, const round_t *prev, const u8 *signer) {
  u8 item[32];
  sha256_2(signer, 32, NULL, 0, item);
  u64 bits, keys;
  bloom_params(a->config.max_clients, &bits, &keys);
  u64 score = 0;
  for (u64 i = 0; i < prev->witnesses_len; i++)
    if (bloom_contains(&prev->witnesses[i].participant, bits, keys, item)) score++;
  return score >= witness_quorum(expected_witnesses(&a->config, prev->clients_len));
}

/* One entry of a health-check instruction: signer, committee, position, index (41 bytes). */
#define HEALTH_ENTRY_BYTES 41

/* health.ts healthCheck over `count` packed entries. */
static u64 health_check(account_t *a, const u8 *from, const u8 *entries, u64 count) {
  if (is_halted(a)) return E_HALTED;
  if (a->run_state != RS_ROUND_TRAIN && a->run_state != RS_ROUND_WITNESS) return E_WRONG_RUN_STATE;
  if (current_round(a)->height < 2) {
    LOG("health check: health checks start at round 2");
    return E_INVALID_HEALTH_CHECK;
  }
  round_t *prev = previous_round(a);
  epoch_state_t *es = &a->epoch_state;
  bool member = false;
  for (u64 i = 0; i < es->clients_len && !member; i++) member = same_key(es->clients[i].signer, from);
  if (!member) {
    LOG("health check: the sender is not a client of this epoch");
    return E_INVALID_HEALTH_CHECK;
  }
  if (count == 0 || count > prev->clients_len) {
    LOG("health check: wrong number of entries");
    return E_INVALID_HEALTH_CHECK;
  }
  for (u64 k = 0; k < count; k++) {
    const u8 *e = entries + k * HEALTH_ENTRY_BYTES;
    u8 committee = e[32];
    u64 position = rd32(e + 33), index = rd32(e + 37);
    if (!verify_committee_proof(prev, index, position, committee)) {
      LOG("health check: committee proof does not verify for the previous round");
      sol_log_64_(k, index, position, committee, 0);
      return E_INVALID_COMMITTEE_PROOF;
    }
    const client_t *c = round_client(a, prev->height, index);
    if (c == NULL || !mem_eq(c->signer, e, 32)) {
      LOG("health check: proof index is another client");
      return E_INVALID_HEALTH_CHECK;
    }
    if (committee != COMMITTEE_TRAINER) {
      LOG("health check: only trainers can be checked");
      return E_INVALID_HEALTH_CHECK;
    }
    if (trainer_healthy(a, prev, e)) {
      LOG("health check: the client is healthy");
      sol_log_64_(k, index, 0, 0, 0);
      return E_INVALID_HEALTH_CHECK;
    }
  }
  for (u64 k = 0; k < count; k++) {
    const u8 *signer = entries + k * HEALTH_ENTRY_BYTES;
    for (u64 i = 0; i < es->clients_len; i++)
      if (es->clients[i].state == CS_HEALTHY && mem_eq(es->clients[i].signer, signer, 32))
        es->clients[i].state = CS_DROPPED;
  }
  return 0;
}

/* machine_membership.ts pause. */
static u64 pause(account_t *a, u64 now) {
  switch (a->run_state) {
  case RS_ROUND_TRAIN:
  case RS_ROUND_WITNESS:
  case RS_COOLDOWN:
    a->pending_pause = 1;
    return 0;
  case RS_WAITING_FOR_MEMBERS:
  case RS_WARMUP:
    mark_all_healthy(a, CS_WITHDRAWN);
    a->epoch_state.cold_start_epoch = 1;
    change_state(a, RS_PAUSED, now);
    return 0;
  default:
    return E_WRONG_RUN_STATE;
  }
}

/* machine_membership.ts resume. */
static u64 resume(account_t *a, u64 now) {
  if (a->run_state == RS_PAUSED || a->run_state == RS_UNINITIALIZED) {
    change_state(a, state_after_epoch(a), now);
    return 0;
  }
  if (a->pending_pause) {
    a->pending_pause = 0;
    return 0;
  }
  return E_CANNOT_RESUME;
}

static void set_repo(checkpoint_t *c, u8 kind, const checkpoint_t *report) {
  c->kind = kind;
  c->has_second = report->has_second;
  c->first_len = report->first_len;
  c->second_len = report->second_len;
  mem_zero(c->first, STR_BYTES);
  mem_zero(c->second, STR_BYTES);
  mem_copy(c->first, report->first, report->first_len);
  mem_copy(c->second, report->second, report->second_len);
}

/*
 * machine_cooldown.ts checkpoint; the rest of `r` is the encoded Checkpoint. The checks come in
 * the reference's order, so both refuse a report with the same code.
 */
static u64 checkpoint(account_t *a, const u8 *from, u64 index, const reader_t *rest, u64 now) {
  if (a->run_state == RS_UNINITIALIZED) return E_WRONG_RUN_STATE;
  epoch_state_t *es = &a->epoch_state;
  if (index >= es->clients_len) {
    LOG("checkpoint: no such client");
    return E_INVALID_CHECKPOINT;
  }
  if (!same_key(es->clients[index].signer, from)) {
    LOG("checkpoint: the client is not the sender");
    return E_INVALID_CHECKPOINT;
  }
  if (a->run_state != RS_COOLDOWN) {
    LOG("checkpoint: checkpointers report during Cooldown only");
    return E_WRONG_RUN_STATE;
  }
  if (es->clients[index].state != CS_HEALTHY) {
    LOG("checkpoint: the client is not Healthy");
    return E_INVALID_CHECKPOINT;
  }
  if (!is_checkpointer(current_round(a)->random_seed, es->clients_len, index)) {
    LOG("checkpoint: the client is not an elected checkpointer");
    return E_INVALID_CHECKPOINT;
  }
  checkpoint_t report;
  reader_t r = {rest->p + rest->pos, rest->len - rest->pos, 0, true};
  get_checkpoint(&r, &report);
  if (!r.ok || r.pos != r.len || (report.kind != CK_HUB && report.kind != CK_GCS) ||
      report.first_len == 0 || (report.has_second && report.second_len == 0)) {
    LOG("checkpoint: a report must be a Hub or Gcs checkpoint with non-empty strings");
    return E_INVALID_CHECKPOINT;
  }
  checkpoint_t *c = &a->model.checkpoint;
  u8 kind;
  if (report.kind == CK_HUB) {
    if (c->kind == CK_P2P || c->kind == CK_P2PGCS) kind = CK_P2P;
    else if (c->kind == CK_HUB || c->kind == CK_DUMMY) kind = CK_HUB;
    else return E_INVALID_CHECKPOINT;
  } else {
    if (c->kind == CK_P2P || c->kind == CK_P2PGCS) kind = CK_P2PGCS;
    else if (c->kind == CK_GCS) kind = CK_GCS;
    else return E_INVALID_CHECKPOINT;
  }
  u64 winner;
  if (!digest_consensus(a, witness_quorum(expected_witnesses(&a->config, current_round(a)->clients_len)),
                        &winner)) {
    LOG("checkpoint: the Cooldown digest vote has no quorum yet");
    return E_INVALID_CHECKPOINT;
  }
  set_repo(c, kind, &report);
  end_cooldown(a, now);
  return 0;
}
