/*
 * codec.c (part of the program.c unity build): a bounds-checked reader of instruction
 * data, strict UTF-8 validation, and the parser of the state-encoding LlmModel
 * (docs/state-encoding.md) that the update instruction carries. Everything the decoder
 * (coordinator/encoding/read.ts) would reject is rejected here, so the account always
 * decodes.
 */

typedef struct {
  const u8 *p;
  u64 len;
  u64 pos;
  bool ok;
} reader_t;

static const u8 *take(reader_t *r, u64 n) {
  if (!r->ok || n > r->len - r->pos) {
    r->ok = false;
    return NULL;
  }
  const u8 *at = r->p + r->pos;
  r->pos += n;
  return at;
}
static u8 get8(reader_t *r) {
  const u8 *p = take(r, 1);
  return p ? p[0] : 0;
}
static u16 get16(reader_t *r) {
  const u8 *p = take(r, 2);
  return p ? rd16(p) : 0;
}
static u32 get32(reader_t *r) {
  const u8 *p = take(r, 4);
  return p ? rd32(p) : 0;
}
static u64 get64(reader_t *r) {
  const u8 *p = take(r, 8);
  return p ? rd64(p) : 0;
}
/* A code below `n`. */
static u8 get_code(reader_t *r, u8 n) {
  u8 c = get8(r);
  if (c >= n) r->ok = false;
  return c;
}
static bool get_bool(reader_t *r) { return get_code(r, 2) == 1; }
/* A finite IEEE-754 double (exponent bits not all ones). */
static void skip_f64(reader_t *r) {
  u64 bits = get64(r);
  if (((bits >> 52) & 0x7ff) == 0x7ff) r->ok = false;
}

/* Strictly valid UTF-8: no overlongs, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const u8 *s, u64 n) {
  u64 i = 0;
  while (i < n) {
    u8 c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    u64 extra;
    u32 cp;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (extra > n - i - 1) return false;
    for (u64 k = 1; k <= extra; k++) {
      u8 d = s[i + k];
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (extra == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) return false;
    if (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)) return false;
    i += extra + 1;
  }
  return true;
}

/* A `str(cap)`: u8 length, then that many UTF-8 bytes. Returns the bytes (NULL on error). */
static const u8 *get_str(reader_t *r, u64 cap, u8 *len_out) {
  u8 n = get8(r);
  if (n > cap) r->ok = false;
  const u8 *s = take(r, n);
  if (s != NULL && !utf8_valid(s, n)) r->ok = false;
  if (len_out) *len_out = n;
  return r->ok ? s : NULL;
}

static void skip_http_location(reader_t *r) {
  switch (get_code(r, 3)) {
  case 0: /* SingleUrl */
    get_str(r, URL_BYTES, NULL);
    break;
  case 1: /* NumberedFiles */
    get_str(r, URL_BYTES, NULL);
    get32(r);
    get8(r);
    get32(r);
    break;
  case 2: /* Gcp */
    get_str(r, STR_BYTES, NULL);
    get_str(r, URL_BYTES, NULL);
    break;
  }
}

static void skip_data_location(reader_t *r) {
  switch (get_code(r, 6)) {
  case 0: /* Dummy */
    break;
  case 3: /* Http */
    skip_http_location(r);
    get_code(r, 2);
    if (get_code(r, 2) == 1) take(r, 32);
    break;
  default: /* Server, Local, WeightedHttp, Preprocessed: one URL */
    get_str(r, URL_BYTES, NULL);
    break;
  }
}

static void skip_lr_schedule(reader_t *r) {
  u8 kind = get_code(r, 4);
  skip_f64(r);
  get32(r);
  skip_f64(r);
  if (kind == 1 || kind == 2) {
    get32(r);
    skip_f64(r);
  } else if (kind == 3) {
    get32(r);
    get32(r);
    skip_f64(r);
    get32(r);
    skip_f64(r);
  }
}

static void skip_opt_f64(reader_t *r) {
  if (get_bool(r)) skip_f64(r);
}

static void skip_optimizer(reader_t *r) {
  switch (get_code(r, 3)) {
  case 0:
    break;
  case 1: /* AdamW */
    skip_f64(r);
    skip_f64(r);
    skip_f64(r);
    skip_f64(r);
    skip_opt_f64(r);
    break;
  case 2: /* Distro */
    skip_opt_f64(r);
    skip_opt_f64(r);
    skip_f64(r);
    get32(r);
    get32(r);
    get_bool(r);
    break;
  }
}

/* A state-encoding Checkpoint into `out` (validated strings). */
static void get_checkpoint(reader_t *r, checkpoint_t *out) {
  mem_zero(out, sizeof(checkpoint_t));
  out->kind = get_code(r, 6);
  if (!r->ok || out->kind == CK_EPHEMERAL) return;
  const u8 *first = get_str(r, STR_BYTES, &out->first_len);
  if (first) mem_copy(out->first, first, out->first_len);
  out->has_second = get_bool(r);
  if (out->has_second) {
    const u8 *second = get_str(r, STR_BYTES, &out->second_len);
    if (second) mem_copy(out->second, second, out->second_len);
  }
}

/* Copies the bytes a skip function consumed into a length-prefixed blob. */
static void blob_after(reader_t *r, u64 start, u8 *dst, u16 *dst_len, u64 cap) {
  u64 n = r->pos - start;
  if (!r->ok || n > cap) {
    r->ok = false;
    return;
  }
  mem_copy(dst, r->p + start, n);
  *dst_len = (u16)n;
}

/*
 * Parses a state-encoding LlmModel (version 4: ending with the snapshot dtype) occupying
 * exactly `len` bytes into `out`.
 * Returns false (and logs) when it is malformed.
 */
static bool parse_model(const u8 *bytes, u64 len, model_t *out) {
  reader_t r = {bytes, len, 0, true};
  mem_zero(out, sizeof(model_t));
  out->architecture = get_code(&r, 4);
  out->data_type = get_code(&r, 2);
  out->max_seq_len = get32(&r);
  out->cold_start_warmup_steps = get32(&r);
  u64 start = r.pos;
  skip_data_location(&r);
  blob_after(&r, start, out->data_location, &out->data_location_len, DATA_LOCATION_BYTES);
  get_checkpoint(&r, &out->checkpoint);
  start = r.pos;
  skip_lr_schedule(&r);
  blob_after(&r, start, out->lr_schedule, &out->lr_schedule_len, LR_SCHEDULE_BYTES);
  start = r.pos;
  skip_optimizer(&r);
  blob_after(&r, start, out->optimizer, &out->optimizer_len, OPTIMIZER_BYTES);
  out->snapshot_dtype = get_code(&r, 2); /* state encoding version 4: 0 f32, 1 bf16 */
  if (!r.ok || r.pos != len) {
    LOG("model: malformed state-encoding LlmModel");
    sol_log_64_(len, r.pos, r.ok, 0, 0);
    return false;
  }
  return true;
}
