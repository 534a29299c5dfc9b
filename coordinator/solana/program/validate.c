/*
 * validate.c (part of the program.c unity build): the rules a run's config, model and progress must
 * satisfy (coordinator/core/machine_validate.ts and coordinator/config/validate.ts; Psyche's
 * `CoordinatorConfig::check` in shared/coordinator/src/coordinator.rs), plus the program's own cap
 * of MAX_CLIENTS clients. Each failure logs the field and rule.
 */

#define REQUIRE(cond, msg)                                                                         \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      LOG(msg);                                                                                    \
      return E_INVALID_CONFIG;                                                                     \
    }                                                                                              \
  } while (0)

/*
 * The config rules of machine_validate.ts validateCoordinatorConfig and
 * coordinator/config/validate.ts (which adds initMinClients <= globalBatchSizeStart), with
 * maxClients <= MAX_CLIENTS.
 */
static u64 validate_config(const config_t *c) {
  REQUIRE(c->epoch_time >= 1 && c->epoch_time <= MAX_SAFE_INTEGER, "config.epochTime must be in [1, 2^53-1]");
  REQUIRE(c->warmup_time <= MAX_SAFE_INTEGER, "config.warmupTime must be at most 2^53-1");
  REQUIRE(c->warmup_time < c->epoch_time, "config.warmupTime must be < epochTime");
  REQUIRE(c->cooldown_time >= 1 && c->cooldown_time <= MAX_SAFE_INTEGER, "config.cooldownTime must be in [1, 2^53-1]");
  REQUIRE(c->max_round_train_time >= 1 && c->max_round_train_time <= MAX_SAFE_INTEGER,
          "config.maxRoundTrainTime must be in [1, 2^53-1]");
  REQUIRE(c->max_round_train_time < c->epoch_time, "config.maxRoundTrainTime must be < epochTime");
  REQUIRE(c->round_witness_time >= 1 && c->round_witness_time <= MAX_SAFE_INTEGER,
          "config.roundWitnessTime must be in [1, 2^53-1]");
  REQUIRE(c->global_batch_size_warmup_tokens <= MAX_SAFE_INTEGER,
          "config.globalBatchSizeWarmupTokens must be at most 2^53-1");
  REQUIRE(c->total_steps >= 1, "config.totalSteps must be at least 1");
  REQUIRE(c->max_clients >= 1 && c->max_clients <= MAX_CLIENTS, "config.maxClients must be in [1, 256] on Solana");
  REQUIRE(c->min_clients >= 1 && c->min_clients <= c->max_clients, "config.minClients must be in [1, maxClients]");
  REQUIRE(c->init_min_clients >= c->min_clients && c->init_min_clients <= c->max_clients,
          "config.initMinClients must be in [minClients, maxClients]");
  REQUIRE(c->init_min_clients <= c->global_batch_size_start,
          "config.initMinClients must be at most globalBatchSizeStart (a sequence per client)");
  REQUIRE(c->witness_nodes <= c->min_clients && c->witness_nodes <= MAX_WITNESSES,
          "config.witnessNodes must be at most min(minClients, 32)");
  REQUIRE(c->global_batch_size_start >= 1, "config.globalBatchSizeStart must be at least 1");
  REQUIRE(c->global_batch_size_end >= c->global_batch_size_start,
          "config.globalBatchSizeEnd must be at least globalBatchSizeStart");
  REQUIRE(c->verification_percent <= 100, "config.verificationPercent must be in [0, 100]");
  /* config.verificationBarEpochs: any u16 (machine_validate.ts allows [0, 65535]). */
  REQUIRE(c->waiting_for_members_extra_time >= 1, "config.waitingForMembersExtraTime must be at least 1");
  return 0;
}

/* The model rules that do not depend on the config (model_rules.c has the content rules). */
static u64 validate_model(const model_t *m) {
  if (m->max_seq_len < 1) {
    LOG("model.maxSeqLen must be at least 1");
    return E_INVALID_MODEL;
  }
  if (m->checkpoint.kind == CK_EPHEMERAL) {
    LOG("model.checkpoint must be a stored checkpoint (not Ephemeral)");
    return E_INVALID_MODEL;
  }
  if (m->optimizer_len < 1 || m->optimizer[0] == 0) {
    LOG("model.optimizer must be a real optimizer (not Dummy)");
    return E_INVALID_MODEL;
  }
  if (m->snapshot_dtype > 1) {
    LOG("model.snapshotDtype must be 0 (f32) or 1 (bf16)");
    return E_INVALID_MODEL;
  }
  return validate_model_content(m);
}

/*
 * The model rules that depend on the config: coldStartWarmupSteps <= floor((epochTime -
 * warmupTime) / maxRoundTrainTime), then a Cosine schedule lasting config.totalSteps.
 */
static u64 validate_cold_start(const model_t *m, const config_t *c) {
  u64 max_warmup = (c->epoch_time - c->warmup_time) / c->max_round_train_time;
  if (m->cold_start_warmup_steps > max_warmup) {
    LOG("model.coldStartWarmupSteps must be at most (epochTime - warmupTime) / maxRoundTrainTime");
    return E_INVALID_MODEL;
  }
  return validate_schedule_length(m, c);
}

static u64 validate_progress(u32 step, u64 epoch_start_data_index) {
  if (step < 1 || epoch_start_data_index > MAX_SAFE_INTEGER) {
    LOG("progress.step must be at least 1 and progress.epochStartDataIndex at most 2^53-1");
    return E_INVALID_PROGRESS;
  }
  return 0;
}

/* Everything a run needs before it may leave Uninitialized or Paused. */
static u64 validate_all(const account_t *a) {
  u64 err = validate_config(&a->config);
  if (err) return err;
  if ((err = validate_model(&a->model))) return err;
  if ((err = validate_cold_start(&a->model, &a->config))) return err;
  return validate_progress(a->step, a->epoch_start_data_index);
}
