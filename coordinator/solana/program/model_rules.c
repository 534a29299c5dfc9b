/*
 * model_rules.c (part of the program.c unity build): the model-content rules of
 * coordinator/config/validate.ts (checkModel) on the stored state-encoding bytes of a model,
 * without floating point. parse_model has already checked every length, code, UTF-8 string
 * and that every f64 is finite, so the blobs are walked here without bounds checks.
 *
 * Floats are compared by their IEEE-754 bit patterns: for finite doubles whose sign bit is
 * clear, the order of the values equals the order of their bits as u64. -0.0 counts as 0
 * (as in JavaScript, -0 >= 0).
 *
 * Not mirrored: coordinator/config/validate.ts's "expected an http:// or https:// URL" rules
 * (WeightedHttp, SingleUrl, NumberedFiles' template), which use the WHATWG URL parser
 * (`URL.canParse`); see docs/solana-program.md.
 */

#define F64_SIGN 0x8000000000000000ull
#define F64_ONE 0x3ff0000000000000ull
/* coordinator/config/validate.ts's MAX_LEARNING_RATE, MAX_WEIGHT_DECAY, MAX_ADAM_EPS (1) and
 * MAX_CLIP_GRAD_NORM (1e6), as bit patterns. */
#define F64_MAX_RATE F64_ONE
#define F64_MAX_CLIP 0x412e848000000000ull

#define RULE(cond, code, msg)                                                                      \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      LOG(msg);                                                                                    \
      return code;                                                                                 \
    }                                                                                              \
  } while (0)

/* A forward cursor over an already validated blob. */
typedef struct {
  const u8 *p;
} walk_t;

static u8 w8(walk_t *w) { return *w->p++; }
static u32 w32(walk_t *w) {
  u32 v = rd32(w->p);
  w->p += 4;
  return v;
}
static u64 w64(walk_t *w) {
  u64 v = rd64(w->p);
  w->p += 8;
  return v;
}
/* A `str(cap)`: its length into *n, returns its bytes. */
static const u8 *wstr(walk_t *w, u8 *n) {
  *n = w8(w);
  const u8 *s = w->p;
  w->p += *n;
  return s;
}

/* A finite double >= 0 (+0, -0 or positive). */
static bool f64_nonneg(u64 bits) { return (bits & F64_SIGN) == 0 || bits == F64_SIGN; }
/* A finite double > 0. */
static bool f64_pos(u64 bits) { return (bits & F64_SIGN) == 0 && bits != 0; }
/* The order key of a finite double >= 0 (-0 becomes +0). */
static u64 f64_key(u64 bits) { return bits & ~F64_SIGN; }
/* A finite double in [0, max] (max given as the bits of a positive double). */
static bool f64_in(u64 bits, u64 max) { return f64_nonneg(bits) && f64_key(bits) <= max; }
/* A finite double in (0, max]. */
static bool f64_pos_upto(u64 bits, u64 max) { return f64_pos(bits) && bits <= max; }

/* Whether code point `cp` is whitespace to JavaScript's String.prototype.trim. */
static bool js_space(u32 cp) {
  return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

/* Whether valid UTF-8 `s` is empty after trim() (only whitespace code points). */
static bool blank(const u8 *s, u8 n) {
  u64 i = 0;
  while (i < n) {
    u8 c = s[i];
    u32 cp;
    u64 len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if (c < 0xe0) {
      cp = ((u32)(c & 0x1f) << 6) | (s[i + 1] & 0x3f);
      len = 2;
    } else if (c < 0xf0) {
      cp = ((u32)(c & 0x0f) << 12) | ((u32)(s[i + 1] & 0x3f) << 6) | (s[i + 2] & 0x3f);
      len = 3;
    } else {
      return false; /* four-byte code points are never whitespace */
    }
    if (!js_space(cp)) return false;
    i += len;
  }
  return true;
}

static bool has_nul(const u8 *s, u8 n) {
  for (u8 i = 0; i < n; i++)
    if (s[i] == 0) return true;
  return false;
}

static bool is_digit(u8 c) { return c >= '0' && c <= '9'; }
static bool is_hex(u8 c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
static bool is_host_char(u8 c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-';
}

/* coordinator/config/validate.ts isHostPort: `host:port` or `[v6]:port`, port 1..65535 in 1-5 digits. */
static bool host_port(const u8 *s, u8 n) {
  u8 i = 0;
  if (n > 0 && s[0] == '[') {
    i = 1;
    while (i < n && (is_hex(s[i]) || s[i] == ':' || s[i] == '.')) i++;
    if (i == 1 || i >= n || s[i] != ']') return false;
    i++;
  } else {
    while (i < n && is_host_char(s[i])) i++;
    if (i == 0) return false;
  }
  if (i >= n || s[i] != ':') return false;
  i++;
  u8 digits = n - i;
  if (digits < 1 || digits > 5) return false;
  u32 port = 0;
  for (; i < n; i++) {
    if (!is_digit(s[i])) return false;
    port = port * 10 + (u32)(s[i] - '0');
  }
  return port >= 1 && port <= 0xffff;
}

/* Whether `{}` occurs exactly once (non-overlapping, as String.prototype.split counts). */
static bool one_placeholder(const u8 *s, u8 n) {
  u32 count = 0;
  for (u8 i = 0; i + 1 < n; i++) {
    if (s[i] == '{' && s[i + 1] == '}') {
      count++;
      i++;
    }
  }
  return count == 1;
}

static u64 check_data_location(const model_t *m) {
  walk_t w = {m->data_location};
  u8 n;
  const u8 *s;
  switch (w8(&w)) {
  case 0: /* Dummy */
    return 0;
  case 1: /* Server */
    s = wstr(&w, &n);
    RULE(!blank(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Server must not be empty");
    RULE(n <= STR_BYTES, E_INVALID_DATA_LOCATION, "model.dataLocation.Server is at most 64 bytes");
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Server has a NUL");
    RULE(host_port(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Server must be host:port");
    return 0;
  case 2: /* Local */
  case 5: /* Preprocessed */
    s = wstr(&w, &n);
    RULE(!blank(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation path must not be empty");
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation path has a NUL");
    return 0;
  case 4: /* WeightedHttp */
    s = wstr(&w, &n);
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.WeightedHttp has a NUL");
    return 0;
  default: /* 3: Http */
    break;
  }
  switch (w8(&w)) {
  case 0: /* SingleUrl */
    s = wstr(&w, &n);
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Http url has a NUL");
    return 0;
  case 1: { /* NumberedFiles */
    s = wstr(&w, &n);
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Http urlTemplate has a NUL");
    RULE(one_placeholder(s, n), E_INVALID_DATA_LOCATION,
         "model.dataLocation.Http urlTemplate must contain exactly one {}");
    w32(&w);
    w8(&w);
    u32 num_files = w32(&w);
    RULE(num_files >= 1, E_INVALID_DATA_LOCATION, "model.dataLocation.Http numFiles must be > 0");
    return 0;
  }
  default: { /* 2: Gcp */
    s = wstr(&w, &n);
    RULE(!blank(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Http bucketName is empty");
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Http bucketName has a NUL");
    s = wstr(&w, &n);
    RULE(!has_nul(s, n), E_INVALID_DATA_LOCATION, "model.dataLocation.Http filterDirectory has a NUL");
    return 0;
  }
  }
}

/* Hub/P2P/Dummy: (repoId, revision?); Gcs/P2PGcs: (bucket, prefix?). Ephemeral is rejected earlier. */
static u64 check_checkpoint(const checkpoint_t *c) {
  bool gcs = c->kind == CK_GCS || c->kind == CK_P2PGCS;
  RULE(!has_nul(c->first, c->first_len), E_INVALID_MODEL_CHECKPOINT,
       "model.checkpoint repoId/bucket has a NUL");
  if (c->kind != CK_DUMMY) {
    RULE(!blank(c->first, c->first_len), E_INVALID_MODEL_CHECKPOINT,
         "model.checkpoint repoId/bucket must not be empty");
  }
  if (c->has_second) {
    RULE(!has_nul(c->second, c->second_len), E_INVALID_MODEL_CHECKPOINT,
         "model.checkpoint revision/prefix has a NUL");
    if (!gcs) {
      RULE(!blank(c->second, c->second_len), E_INVALID_MODEL_CHECKPOINT,
           "model.checkpoint revision must not be empty when given");
    }
  }
  return 0;
}

static u64 check_lr_schedule(const model_t *m) {
  walk_t w = {m->lr_schedule};
  u8 kind = w8(&w);
  u64 base_lr = w64(&w);
  u32 warmup_steps = w32(&w);
  u64 warmup_init_lr = w64(&w);
  RULE(f64_in(base_lr, F64_MAX_RATE), E_INVALID_LR_SCHEDULE, "model.lrSchedule.baseLr must be in [0, 1]");
  RULE(f64_in(warmup_init_lr, F64_MAX_RATE), E_INVALID_LR_SCHEDULE,
       "model.lrSchedule.warmupInitLr must be in [0, 1]");
  if (kind == 1 || kind == 2) { /* Linear, Cosine */
    u32 total_steps = w32(&w);
    u64 final_lr = w64(&w);
    RULE(f64_in(final_lr, F64_MAX_RATE), E_INVALID_LR_SCHEDULE, "model.lrSchedule.finalLr must be in [0, 1]");
    if (kind == 1) {
      RULE(total_steps >= warmup_steps, E_INVALID_LR_SCHEDULE,
           "model.lrSchedule.Linear.totalSteps must be at least warmupSteps");
    } else {
      RULE(total_steps > warmup_steps, E_INVALID_LR_SCHEDULE,
           "model.lrSchedule.Cosine.totalSteps must be greater than warmupSteps");
    }
  } else if (kind == 3) { /* WarmupStableDecay */
    u64 stable = w32(&w);
    u64 cosine_steps = w32(&w);
    u64 cosine_final = w64(&w);
    u64 linear_steps = w32(&w);
    u64 linear_final = w64(&w);
    RULE(f64_in(cosine_final, F64_MAX_RATE), E_INVALID_LR_SCHEDULE,
         "model.lrSchedule.cosineDecayFinalLr must be in [0, 1]");
    RULE(f64_in(linear_final, F64_MAX_RATE), E_INVALID_LR_SCHEDULE,
         "model.lrSchedule.linearDecayFinalLr must be in [0, 1]");
    RULE(f64_key(cosine_final) <= f64_key(base_lr), E_INVALID_LR_SCHEDULE,
         "model.lrSchedule.cosineDecayFinalLr must be at most baseLr");
    RULE(f64_key(linear_final) <= f64_key(cosine_final), E_INVALID_LR_SCHEDULE,
         "model.lrSchedule.linearDecayFinalLr must be at most cosineDecayFinalLr");
    RULE(warmup_steps + stable + cosine_steps + linear_steps <= 0xffffffffull, E_INVALID_LR_SCHEDULE,
         "model.lrSchedule: warmup + stable + cosine + linear decay steps must fit in a u32");
  }
  return 0;
}

static u64 check_optimizer(const model_t *m) {
  walk_t w = {m->optimizer};
  if (w8(&w) == 1) { /* AdamW */
    u64 beta0 = w64(&w), beta1 = w64(&w), weight_decay = w64(&w), eps = w64(&w);
    RULE(f64_nonneg(beta0) && f64_key(beta0) < F64_ONE, E_INVALID_OPTIMIZER,
         "model.optimizer.AdamW.betas[0] must be in [0, 1)");
    RULE(f64_nonneg(beta1) && f64_key(beta1) < F64_ONE, E_INVALID_OPTIMIZER,
         "model.optimizer.AdamW.betas[1] must be in [0, 1)");
    RULE(f64_in(weight_decay, F64_MAX_RATE), E_INVALID_OPTIMIZER,
         "model.optimizer.AdamW.weightDecay must be in [0, 1]");
    RULE(f64_pos_upto(eps, F64_MAX_RATE), E_INVALID_OPTIMIZER, "model.optimizer.AdamW.eps must be in (0, 1]");
    if (w8(&w))
      RULE(f64_pos_upto(w64(&w), F64_MAX_CLIP), E_INVALID_OPTIMIZER,
           "model.optimizer.clipGradNorm must be in (0, 1e6]");
    return 0;
  }
  /* Distro (Dummy is rejected earlier). */
  if (w8(&w))
    RULE(f64_pos_upto(w64(&w), F64_MAX_CLIP), E_INVALID_OPTIMIZER,
         "model.optimizer.clipGradNorm must be in (0, 1e6]");
  if (w8(&w))
    RULE(f64_in(w64(&w), F64_MAX_RATE), E_INVALID_OPTIMIZER,
         "model.optimizer.weightDecay must be in [0, 1]");
  u64 decay = w64(&w);
  u64 topk = w32(&w);
  u64 chunk = w32(&w);
  RULE(f64_pos(decay) && decay <= F64_ONE, E_INVALID_OPTIMIZER,
       "model.optimizer.Distro.compressionDecay must be in (0, 1]");
  RULE(chunk >= 1 && chunk <= 0xffff, E_INVALID_OPTIMIZER,
       "model.optimizer.Distro.compressionChunk must be in [1, 65535]");
  RULE(topk >= 1 && topk <= 0xffff, E_INVALID_OPTIMIZER,
       "model.optimizer.Distro.compressionTopk must be in [1, 65535]");
  RULE(topk <= chunk * chunk, E_INVALID_OPTIMIZER,
       "model.optimizer.Distro.compressionTopk must be at most compressionChunk^2");
  return 0;
}

/* Every model-content rule that needs no config, in coordinator/config/validate.ts's order. */
static u64 validate_model_content(const model_t *m) {
  u64 err;
  if ((err = check_data_location(m))) return err;
  if ((err = check_checkpoint(&m->checkpoint))) return err;
  if ((err = check_lr_schedule(m))) return err;
  return check_optimizer(m);
}

/* A Cosine schedule must last at least config.totalSteps (past its end it rises again). */
static u64 validate_schedule_length(const model_t *m, const config_t *c) {
  walk_t w = {m->lr_schedule};
  if (w8(&w) != 2) return 0;
  w.p += 8 + 4 + 8;
  RULE(w32(&w) >= c->total_steps, E_INVALID_LR_SCHEDULE,
       "model.lrSchedule.Cosine.totalSteps must be at least config.totalSteps");
  return 0;
}
