/*
 * verification.c (part of the program.c unity build): verification of sampled results, a
 * transcription of coordinator/core/verification.ts (docs/protocol.md, "Verification"), which
 * the differential tests hold it to.
 *
 * - open_verification_tasks, when round h starts: samples round h - 1's batches with round h's
 *   seed and seats VERIFIERS_PER_TASK other Healthy clients per sampled trainer;
 * - verification_report: a seated verifier's Pass or Fail, decided by a strict majority; a
 *   decided task stays open, so a late contrary report is ejected too;
 * - close_verification_stages, when a round's RoundWitness ends: idle seats are ejected, a
 *   decided task closes, a contested one goes to fresh tie-breakers;
 * - the bar: ejection records keep a signer out of the epochs below its barred_until.
 *
 * Every draw is one sha256 syscall and a committee takes at most MAX_COMMITTEE_DRAWS of them
 * before a scan completes it, so the cost is bounded whatever the number of clients.
 */

/* The salts of verification.ts (SAMPLE_SALT, VERIFIER_SALT, TIE_BREAKER_SALT). */
#define SAMPLE_SALT "verification sample"
#define VERIFIER_SALT "verifier"
#define TIE_BREAKER_SALT "tie-breaker"

/* lcg.ts LCG_A and LCG_C (Knuth's MMIX constants). */
#define LCG_A 6364136223846793005ull
#define LCG_C 1442695040888963407ull

static bool bit_of(const u8 *bits, u64 i) { return (bits[i >> 3] >> (i & 7)) & 1; }
static void set_bit(u8 *bits, u64 i) { bits[i >> 3] |= (u8)(1u << (i & 7)); }

/* One sequence of draws: verificationDraw's seed (as sha256(u64le(seed))), salt and ids. */
typedef struct {
  u8 base[32];
  const char *salt;
  u64 salt_len;
  u32 a;
  u32 b;
} draw_t;

static void draw_init(draw_t *d, u64 seed, const char *salt, u64 salt_len, u32 a, u32 b) {
  u8 le[8];
  wr64(le, seed);
  sha256_2(le, 8, NULL, 0, d->base);
  d->salt = salt;
  d->salt_len = salt_len;
  d->a = a;
  d->b = b;
}

/* verificationDraw: u64le(sha256(sha256(u64le(seed)) || salt || u32le(a) || u32le(b) ||
   u32le(k))[0..8]) mod n. */
static u64 draw_at(const draw_t *d, u32 k, u64 n) {
  u8 ids[12], digest[32];
  wr32(ids, d->a);
  wr32(ids + 4, d->b);
  wr32(ids + 8, k);
  sol_bytes_t parts[3] = {{d->base, 32}, {(const u8 *)d->salt, d->salt_len}, {ids, 12}};
  sol_sha256(parts, 3, digest);
  return rd64(digest) % n;
}

/* The eligible clients of a seat draw: Healthy, and not among `excluded` (epoch indices). */
typedef struct {
  const epoch_state_t *es; /* NULL: every index is eligible (sampling batches) */
  const u16 *excluded;
  u64 excluded_len;
} eligibility_t;

static bool is_eligible_seat(const eligibility_t *el, u64 i) {
  if (el->es == NULL) return true;
  const client_t *c = &el->es->clients[i];
  if (c->state != CS_HEALTHY) return false;
  for (u64 k = 0; k < el->excluded_len; k++)
    if (el->excluded[k] == c->epoch_index) return false;
  return true;
}

static bool picked_already(const u16 *out, u64 picked, u64 i) {
  for (u64 k = 0; k < picked; k++)
    if (out[k] == i) return true;
  return false;
}

/*
 * pickDistinct: up to `count` (a handful) distinct indices of [0, n) that `el` allows: the
 * first eligible ones among the draws 0, 1, ... (at most MAX_COMMITTEE_DRAWS), then the rest in
 * index order. Returns how many it wrote to `out`.
 */
static u64 pick_distinct(u64 n, u64 count, const eligibility_t *el, const draw_t *d, u16 *out) {
  u64 picked = 0;
  for (u32 k = 0; k < MAX_COMMITTEE_DRAWS && picked < count; k++) {
    u64 i = draw_at(d, k, n);
    if (is_eligible_seat(el, i) && !picked_already(out, picked, i)) out[picked++] = (u16)i;
  }
  for (u64 i = 0; i < n && picked < count; i++)
    if (is_eligible_seat(el, i) && !picked_already(out, picked, i)) out[picked++] = (u16)i;
  return picked;
}

/* verificationSampleCount: 0 at 0%, else max(1, floor(batches * percent / 100)), capped. */
static u64 sample_count(u64 percent, u64 batches) {
  if (percent == 0 || batches == 0) return 0;
  u64 share = batches * percent / 100;
  if (share < 1) share = 1;
  if (share > MAX_SAMPLES_PER_ROUND) share = MAX_SAMPLES_PER_ROUND;
  return share < batches ? share : batches;
}

/* verificationMajority: a strict majority of `seats`. */
static u64 majority(u64 seats) { return seats / 2 + 1; }

/* machine_queries.ts isTrainingRound. */
static bool is_training_round(const account_t *a, const round_t *r) {
  const epoch_state_t *es = &a->epoch_state;
  return es->last_step == 0 || (u64)es->start_step + r->height + 3 <= es->last_step;
}

/*
 * data_selection.ts assignDataForRound's trainer order for a round of `n` clients: every client
 * is a Trainer (no tie-breakers, no Verifier committee), so the trainers are [0, n) shuffled by
 * the LCG Fisher-Yates of the round's seed (deterministic_shuffle.ts, lcg.ts).
 */
static void shuffled_trainers(u64 n, u64 seed, u16 *out) {
  for (u64 i = 0; i < n; i++) out[i] = (u16)i;
  u64 state = seed;
  for (u64 i = n; i-- > 1;) {
    state = state * LCG_A + LCG_C;
    u64 j = state % (i + 1);
    u16 tmp = out[i];
    out[i] = out[j];
    out[j] = tmp;
  }
}

/*
 * The client of the epoch's current list with `epoch_index`, or NULL. The list is in
 * epoch-index order (clients leave it without reordering it), so a binary search finds it.
 */
static client_t *live_client(account_t *a, u64 epoch_index) {
  epoch_state_t *es = &a->epoch_state;
  u64 lo = 0, hi = es->clients_len;
  while (lo < hi) {
    u64 mid = (lo + hi) / 2;
    u64 e = es->clients[mid].epoch_index;
    if (e == epoch_index) return &es->clients[mid];
    if (e < epoch_index) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

/*
 * machine_queries.ts roundClients(height), as epoch indices: the clients still in the epoch
 * and those that left after round `height`, in epoch-index order. Returns how many.
 */
static u64 round_epoch_indices(account_t *a, u64 height, u16 *out) {
  epoch_state_t *es = &a->epoch_state;
  u8 present[MAX_CLIENTS / 8];
  mem_zero(present, sizeof(present));
  u64 gone = 0;
  for (u64 i = 0; i < es->exited_len; i++) {
    if (es->exited[i].exited_height <= height) continue;
    set_bit(present, es->exited[i].epoch_index);
    gone++;
  }
  if (gone == 0) {
    for (u64 i = 0; i < es->clients_len; i++) out[i] = es->clients[i].epoch_index;
    return es->clients_len;
  }
  for (u64 i = 0; i < es->clients_len; i++) set_bit(present, es->clients[i].epoch_index);
  u64 n = 0;
  for (u64 e = 0; e < MAX_CLIENTS; e++)
    if (bit_of(present, e)) out[n++] = (u16)e;
  return n;
}

/*
 * drawSeats: up to VERIFIERS_PER_TASK Healthy clients of the current list whose epoch index is
 * not among `excluded`, drawn from `d` over the list's indices; none when fewer than
 * MIN_VERIFIERS_PER_TASK are eligible. Writes epoch indices in draw order.
 */
static u64 draw_seats(account_t *a, const u16 *excluded, u64 excluded_len, const draw_t *d,
                      u16 *out) {
  epoch_state_t *es = &a->epoch_state;
  u64 available = 0;
  for (u64 i = 0; i < es->clients_len; i++) available += es->clients[i].state == CS_HEALTHY;
  for (u64 k = 0; k < excluded_len; k++) {
    const client_t *c = live_client(a, excluded[k]);
    bool repeated = false;
    for (u64 j = 0; j < k; j++) repeated |= excluded[j] == excluded[k];
    if (c != NULL && c->state == CS_HEALTHY && !repeated) available--;
  }
  u64 count = available < VERIFIERS_PER_TASK ? available : VERIFIERS_PER_TASK;
  if (count < MIN_VERIFIERS_PER_TASK) return 0;
  eligibility_t el = {es, excluded, excluded_len};
  u16 picked[VERIFIERS_PER_TASK];
  u64 got = pick_distinct(es->clients_len, count, &el, d, picked);
  for (u64 k = 0; k < got; k++) out[k] = es->clients[picked[k]].epoch_index;
  return got;
}

static void add_seat(task_t *t, u16 verifier, u8 stage) {
  seat_t *s = &t->seats[t->seats_len++];
  mem_zero(s, sizeof(seat_t));
  s->verifier = verifier;
  s->stage = stage;
}

/* verification.ts eject: marks, rejects the results whose apply is not due, records once. */
static void eject(account_t *a, u64 epoch_index, u8 cause, u8 evidence, u32 step) {
  epoch_state_t *es = &a->epoch_state;
  client_t *client = live_client(a, epoch_index);
  bool live = client != NULL;
  for (u64 i = 0; i < es->exited_len && client == NULL; i++)
    if (es->exited[i].epoch_index == epoch_index) client = &es->exited[i];
  if (client == NULL) return;
  if (live) client->state = CS_EJECTED;
  if (a->run_state == RS_ROUND_TRAIN || a->run_state == RS_ROUND_WITNESS) {
    /* Rounds h - 1 and h during round h: their results are applied in rounds h + 1, h + 2. */
    u64 height = current_round(a)->height;
    round_t *before = height == 0 ? NULL : round_by_height(a, height - 1);
    if (before != NULL) set_bit(before->rejected, epoch_index);
    set_bit(current_round(a)->rejected, epoch_index);
  }
  u64 first = rd64(client->signer);
  for (u64 i = 0; i < a->ejections_len; i++) {
    const ejection_t *r = &a->ejections[i];
    if (r->epoch == a->epoch && rd64(r->signer) == first && mem_eq(r->signer, client->signer, 32))
      return;
  }
  if (a->ejections_len == NUM_EJECTION_RECORDS) {
    for (u64 i = 1; i < NUM_EJECTION_RECORDS; i++) a->ejections[i - 1] = a->ejections[i];
    a->ejections_len--;
  }
  ejection_t *r = &a->ejections[a->ejections_len++];
  mem_zero(r, sizeof(ejection_t));
  mem_copy(r->signer, client->signer, 32);
  r->epoch = a->epoch;
  r->step = step;
  r->cause = cause;
  r->evidence = evidence;
  u64 until = (u64)a->epoch + a->config.verification_bar_epochs + 1;
  r->barred_until = (u16)(until > 0xffff ? 0xffff : until);
}

static void remove_task(account_t *a, u64 at) {
  epoch_state_t *es = &a->epoch_state;
  u64 n = es->verification_tasks_len;
  for (u64 i = at + 1; i < n; i++)
    mem_copy(&es->verification_tasks[i - 1], &es->verification_tasks[i], sizeof(task_t));
  mem_zero(&es->verification_tasks[n - 1], sizeof(task_t));
  es->verification_tasks_len = (u8)(n - 1);
}

/* The cause of ejecting a seat that said the opposite of `verdict`. */
static u8 contrary_cause(u8 verdict) {
  return verdict == VERDICT_FAIL ? CAUSE_FALSE_VOUCH : CAUSE_FALSE_ACCUSATION;
}

/*
 * verification.ts decide, once per task: on Fail the trainer is ejected with the evidence of the
 * first fail of the deciding stage; every seat of either stage that already said the opposite is
 * ejected as a false voucher or accuser. The task stays open, decided, until its stage closes.
 */
static void decide(account_t *a, task_t *task, u8 verdict) {
  epoch_state_t *es = &a->epoch_state;
  task->decided = verdict;
  u32 step = es->start_step + task->height;
  if (verdict == VERDICT_FAIL) {
    u8 evidence = EVIDENCE_NONE;
    for (u64 i = 0; i < task->seats_len; i++) {
      const seat_t *s = &task->seats[i];
      if (s->stage == task->stage && s->verdict == VERDICT_FAIL) {
        evidence = s->evidence;
        break;
      }
    }
    eject(a, task->trainer, CAUSE_FAILED_VERIFICATION, evidence, step);
  }
  for (u64 i = 0; i < task->seats_len; i++) {
    const seat_t *s = &task->seats[i];
    if (s->verdict == VERDICT_NONE || s->verdict == verdict) continue;
    eject(a, s->verifier, contrary_cause(verdict), EVIDENCE_NONE, step);
  }
}

/* The seats of the task's current stage: how many, and how many passed and failed. */
static void stage_counts(const task_t *t, u64 *seats, u64 *passes, u64 *fails) {
  *seats = *passes = *fails = 0;
  for (u64 i = 0; i < t->seats_len; i++) {
    if (t->seats[i].stage != t->stage) continue;
    (*seats)++;
    if (t->seats[i].verdict == VERDICT_PASS) (*passes)++;
    if (t->seats[i].verdict == VERDICT_FAIL) (*fails)++;
  }
}

/*
 * verification.ts openVerificationTasks, after the round that just started is in place: samples
 * round h - 1's batch assignments with round h's seed and opens a task per sampled trainer still
 * Healthy (a gone one has its result rejected instead).
 */
static void open_verification_tasks(account_t *a, u64 now) {
  epoch_state_t *es = &a->epoch_state;
  const round_t *current = current_round(a);
  u64 percent = a->config.verification_percent;
  if (percent == 0 || current->height == 0) return;
  round_t *results = round_by_height(a, (u64)current->height - 1);
  if (results == NULL || !is_training_round(a, results)) return;
  u64 trainers = results->clients_len;
  u64 batch = batch_size_at(a, results->data_index);
  /* One contiguous batch per trainer, sorted by start; trainers beyond the batch get none. */
  u64 batches = batch < trainers ? batch : trainers;
  u64 room = MAX_VERIFICATION_TASKS - es->verification_tasks_len;
  u64 count = sample_count(percent, batches);
  if (count > room) count = room;
  if (count == 0) return;
  draw_t sample;
  draw_init(&sample, current->random_seed, SAMPLE_SALT, sizeof(SAMPLE_SALT) - 1, results->height, 0);
  u16 sampled[MAX_SAMPLES_PER_ROUND];
  eligibility_t every = {NULL, NULL, 0};
  u64 got = pick_distinct(batches, count, &every, &sample, sampled);
  for (u64 i = 1; i < got; i++) /* ascending, as the TypeScript sorts them */
    for (u64 j = i; j > 0 && sampled[j - 1] > sampled[j]; j--) {
      u16 tmp = sampled[j];
      sampled[j] = sampled[j - 1];
      sampled[j - 1] = tmp;
    }
  u16 order[MAX_CLIENTS], then[MAX_CLIENTS];
  shuffled_trainers(trainers, results->random_seed, order);
  u64 then_len = round_epoch_indices(a, results->height, then);
  for (u64 k = 0; k < got; k++) {
    u64 index = order[sampled[k]];
    if (index >= then_len) continue;
    u16 trainer = then[index];
    const client_t *present = live_client(a, trainer);
    if (present == NULL || present->state != CS_HEALTHY) {
      /* Gone before the sample: its result is not applied, so leaving dodges nothing. */
      set_bit(results->rejected, trainer);
      continue;
    }
    draw_t d;
    mem_copy(d.base, sample.base, 32); /* the same seed: only the salt and ids differ */
    d.salt = VERIFIER_SALT;
    d.salt_len = sizeof(VERIFIER_SALT) - 1;
    d.a = results->height;
    d.b = trainer;
    u16 seats[VERIFIERS_PER_TASK];
    u64 n = draw_seats(a, &trainer, 1, &d, seats);
    if (n == 0) continue; /* fewer than MIN_VERIFIERS_PER_TASK others: none can judge */
    task_t *t = &es->verification_tasks[es->verification_tasks_len++];
    mem_zero(t, sizeof(task_t));
    t->height = results->height;
    t->trainer = trainer;
    t->stage = STAGE_VERIFY;
    t->deadline = current->height + VERIFICATION_STAGE_ROUNDS - 1;
    t->opened_at = now;
    for (u64 s = 0; s < n; s++) add_seat(t, seats[s], STAGE_VERIFY);
  }
}

/*
 * verification.ts closeVerificationStages: closes every stage whose deadline is `ended_height`
 * or earlier and which has lasted verificationStageSeconds (twice max_round_train_time) by `now`,
 * with the tick's seed for tie-breakers: idle seats are ejected, a decided task closes. Tasks are
 * visited oldest first; a closed one leaves its slot to the next.
 */
static void close_verification_stages(account_t *a, u64 ended_height, u64 now, u64 seed) {
  epoch_state_t *es = &a->epoch_state;
  u64 lasts = 2 * a->config.max_round_train_time;
  draw_t tie;
  bool seeded = false;
  u64 i = 0;
  while (i < es->verification_tasks_len) {
    task_t *t = &es->verification_tasks[i];
    if (t->deadline > ended_height || now < t->opened_at + lasts) {
      i++;
      continue;
    }
    u32 step = es->start_step + t->height;
    for (u64 s = 0; s < t->seats_len; s++)
      if (t->seats[s].stage == t->stage && t->seats[s].verdict == VERDICT_NONE)
        eject(a, t->seats[s].verifier, CAUSE_IDLE_VERIFIER, EVIDENCE_NONE, step);
    if (t->decided != VERDICT_NONE) {
      remove_task(a, i);
      continue;
    }
    u64 seats, passes, fails;
    stage_counts(t, &seats, &passes, &fails);
    if (t->stage == STAGE_TIE_BREAK) {
      u64 need = majority(seats);
      if (fails >= need) decide(a, t, VERDICT_FAIL);
      else if (passes >= need) decide(a, t, VERDICT_PASS);
      remove_task(a, i);
      continue;
    }
    if (fails == 0) {
      if (passes > 0) decide(a, t, VERDICT_PASS);
      remove_task(a, i);
      continue;
    }
    /* An accusation without a majority either way: fresh seats break the tie. */
    u16 excluded[1 + MAX_TASK_SEATS];
    excluded[0] = t->trainer;
    for (u64 s = 0; s < t->seats_len; s++) excluded[1 + s] = t->seats[s].verifier;
    if (!seeded) {
      draw_init(&tie, seed, TIE_BREAKER_SALT, sizeof(TIE_BREAKER_SALT) - 1, 0, 0);
      seeded = true;
    }
    tie.a = t->height;
    tie.b = t->trainer;
    u16 breakers[VERIFIERS_PER_TASK];
    u64 n = draw_seats(a, excluded, 1 + t->seats_len, &tie, breakers);
    if (n == 0) {
      remove_task(a, i);
      continue;
    }
    t->stage = STAGE_TIE_BREAK;
    t->deadline = (u32)(ended_height + VERIFICATION_STAGE_ROUNDS);
    t->opened_at = now;
    for (u64 s = 0; s < n; s++) add_seat(t, breakers[s], STAGE_TIE_BREAK);
    i++;
  }
}

/*
 * verification.ts ejectIdleWitnesses: under verification, when round `round`'s RoundWitness ends
 * with a quorum of reports, the elected witnesses that never reported and are still Healthy are
 * ejected as idle, in index order. Only the silent seats' positions (at most half of the seats
 * once a quorum reported) are mapped back to indices, in one pass of the shuffle's rounds.
 */
static void eject_idle_witnesses(account_t *a, const round_t *round) {
  const config_t *c = &a->config;
  if (c->verification_percent == 0 || round->clients_len == 0) return;
  if (round->witnesses_len < witness_quorum(expected_witnesses(c, round->clients_len))) return;
  u64 seats = witness_seats(c) < round->clients_len ? witness_seats(c) : round->clients_len;
  u64 silent[MAX_WITNESSES], indices[MAX_WITNESSES];
  u64 k = 0;
  for (u64 p = 0; p < seats && p < MAX_WITNESSES; p++) {
    bool reported = false;
    for (u64 w = 0; w < round->witnesses_len && !reported; w++)
      reported = round->witnesses[w].position == p;
    if (!reported) silent[k++] = p;
  }
  if (k == 0) return;
  u8 seed[32];
  salted_seed(round->random_seed, "witness", 7, seed);
  unshuffled_indices(silent, k, round->clients_len, seed, indices);
  for (u64 i = 1; i < k; i++) /* index order, as the TypeScript visits them */
    for (u64 j = i; j > 0 && indices[j - 1] > indices[j]; j--) {
      u64 tmp = indices[j];
      indices[j] = indices[j - 1];
      indices[j - 1] = tmp;
    }
  u16 then[MAX_CLIENTS];
  u64 then_len = round_epoch_indices(a, round->height, then);
  u32 step = a->epoch_state.start_step + round->height;
  for (u64 i = 0; i < k; i++) {
    if (indices[i] >= then_len) continue;
    const client_t *live = live_client(a, then[indices[i]]);
    if (live != NULL && live->state == CS_HEALTHY)
      eject(a, then[indices[i]], CAUSE_IDLE_WITNESS, EVIDENCE_NONE, step);
  }
}

/* A report as the instruction carries it (the TCP server's Verification request's fields). */
typedef struct {
  u32 height;
  u16 trainer;
  u8 fail; /* 0 Pass, 1 Fail */
  u8 evidence;
  u32 detail;
} report_msg_t;

/*
 * verification.ts verificationReport: a Healthy client of the epoch holding an unreported seat
 * of the task's current stage says Pass or Fail; a strict majority of the stage decides.
 */
static u64 verification_report(account_t *a, const u8 *from, const report_msg_t *m) {
  if (is_halted(a)) return E_HALTED;
  if (a->run_state != RS_ROUND_TRAIN && a->run_state != RS_ROUND_WITNESS &&
      a->run_state != RS_COOLDOWN)
    return E_WRONG_RUN_STATE;
  if ((m->fail == 0) != (m->evidence == EVIDENCE_NONE)) {
    LOG("verification: a pass carries no evidence and a fail names its evidence");
    return E_INVALID_VERIFICATION;
  }
  epoch_state_t *es = &a->epoch_state;
  const client_t *reporter = NULL;
  u64 first = rd64(from);
  for (u64 i = 0; i < es->clients_len && reporter == NULL; i++)
    if (rd64(es->clients[i].signer) == first && mem_eq(es->clients[i].signer + 8, from + 8, 24))
      reporter = &es->clients[i];
  if (reporter == NULL || reporter->state != CS_HEALTHY) {
    LOG("verification: the sender is not a healthy client of this epoch");
    return E_INVALID_VERIFICATION;
  }
  u64 at = es->verification_tasks_len;
  for (u64 i = 0; i < es->verification_tasks_len && at == es->verification_tasks_len; i++)
    if (es->verification_tasks[i].height == m->height && es->verification_tasks[i].trainer == m->trainer)
      at = i;
  if (at == es->verification_tasks_len) {
    LOG("verification: no open task for that trainer's result of that round");
    return E_INVALID_VERIFICATION;
  }
  task_t *t = &es->verification_tasks[at];
  seat_t *seat = NULL;
  for (u64 s = 0; s < t->seats_len && seat == NULL; s++)
    if (t->seats[s].stage == t->stage && t->seats[s].verifier == reporter->epoch_index) seat = &t->seats[s];
  if (seat == NULL) {
    LOG("verification: the sender holds no seat of the task's current stage");
    return E_INVALID_VERIFICATION;
  }
  if (seat->verdict != VERDICT_NONE) {
    LOG("verification: the sender already reported on that task");
    return E_INVALID_VERIFICATION;
  }
  seat->verdict = m->fail ? VERDICT_FAIL : VERDICT_PASS;
  seat->evidence = m->evidence;
  seat->detail = m->detail;
  if (t->decided != VERDICT_NONE) {
    /* Late, after a majority decided: a report against the decision is a lie like any other. */
    if (seat->verdict != t->decided)
      eject(a, reporter->epoch_index, contrary_cause(t->decided), EVIDENCE_NONE,
            es->start_step + t->height);
    return 0;
  }
  u64 seats, passes, fails;
  stage_counts(t, &seats, &passes, &fails);
  u64 need = majority(seats);
  if (fails >= need) decide(a, t, VERDICT_FAIL);
  else if (passes >= need) decide(a, t, VERDICT_PASS);
  return 0;
}

/* Drops every open task (the epoch ended: its clients and rounds are gone). */
static void drop_verification_tasks(account_t *a) {
  epoch_state_t *es = &a->epoch_state;
  mem_zero(es->verification_tasks, sizeof(es->verification_tasks));
  es->verification_tasks_len = 0;
}

/*
 * The records that bar a signer from `bars->epoch` (barred_until > it), as a 4096-bit prefilter
 * (BAR_FILTER_BYTES, machine.c) on 12 bits of the signer, so the WaitingForMembers tick compares
 * keys only for the few pending clients that hit it. Returns how many records bar anyone.
 */
static u64 bar_filter(const account_t *a, bars_t *bars) {
  mem_zero(bars->filter, BAR_FILTER_BYTES);
  u64 n = 0;
  for (u64 i = 0; i < a->ejections_len; i++) {
    if (a->ejections[i].barred_until <= bars->epoch) continue;
    u64 h = rd16(a->ejections[i].signer) & 0xfff;
    bars->filter[h >> 3] |= (u8)(1u << (h & 7));
    n++;
  }
  return n;
}

/* verification.ts barredUntil(state, signer, bars->epoch) !== null, `bars` from bar_filter. */
static bool is_barred(const account_t *a, const bars_t *bars, const u8 *signer) {
  u64 h = rd16(signer) & 0xfff;
  if ((bars->filter[h >> 3] & (1u << (h & 7))) == 0) return false;
  for (u64 i = 0; i < a->ejections_len; i++)
    if (a->ejections[i].barred_until > bars->epoch && same_key(a->ejections[i].signer, signer))
      return true;
  return false;
}
