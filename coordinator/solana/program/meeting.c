/*
 * meeting.c (part of the program.c unity build): the update instruction's meeting part, where
 * the main authority names the relays and bootstrap peers the run's clients meet at
 * (coordinator/solana/abi/meeting_addresses.ts states the rule; the reference model applies
 * that TypeScript, and the differential tests hold the two together).
 *
 * Wire: count u8, then per entry kind u8 (0 Relay, 1 Bootstrap), length u8, the bytes. The
 * part is read once to find its end and read again to check and store it, so no entry table
 * is kept on the 4 KiB stack frame (the count is whatever a byte holds until checked).
 */

typedef struct {
  const u8 *p; /* the entries, after the count */
  u64 len;     /* their bytes */
  u8 count;
} meeting_part_t;

/* Reads the part's shape (kinds known, lengths present); the rule is meeting_check's. */
static void get_meeting_part(reader_t *r, meeting_part_t *out) {
  out->count = get8(r);
  u64 start = r->pos;
  for (u64 i = 0; i < out->count && r->ok; i++) {
    get_code(r, NUM_MEETING_KINDS);
    take(r, get8(r));
  }
  out->p = r->ok ? r->p + start : NULL;
  out->len = r->pos - start;
}

static bool is_alnum(u8 c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/*
 * A multiaddr-ish address: 1..MEETING_ADDRESS_BYTES bytes of printable ASCII without space,
 * starting with '/', no empty component, ending in "/p2p/" and a peer id of letters and digits.
 */
static bool meeting_address_ok(const u8 *s, u64 n) {
  if (n == 0 || n > MEETING_ADDRESS_BYTES || s[0] != '/' || s[n - 1] == '/') return false;
  u64 last = 0;
  for (u64 i = 0; i < n; i++) {
    if (s[i] < 0x21 || s[i] > 0x7e) return false;
    if (s[i] == '/') {
      if (i > 0 && s[i - 1] == '/') return false;
      last = i;
    }
  }
  for (u64 i = last + 1; i < n; i++)
    if (!is_alnum(s[i])) return false;
  return last >= 4 && mem_eq(s + last - 4, "/p2p", 4);
}

/* E_INVALID_MEETING_ADDRESS when the part names too many or a malformed address. */
static u64 meeting_check(const meeting_part_t *m) {
  if (m->count > MAX_MEETING_ADDRESSES) {
    LOG("update: at most 4 meeting addresses");
    return E_INVALID_MEETING_ADDRESS;
  }
  reader_t r = {m->p, m->len, 0, true};
  for (u64 i = 0; i < m->count; i++) {
    get8(&r);
    u8 n = get8(&r);
    const u8 *s = take(&r, n);
    if (s == NULL || !meeting_address_ok(s, n)) {
      LOG("update: a meeting address must be 1..192 bytes of printable ASCII, a multiaddr "
          "ending in /p2p/<peer id>");
      sol_log_64_(i, n, 0, 0, 0);
      return E_INVALID_MEETING_ADDRESS;
    }
  }
  return 0;
}

/* Replaces the account's meeting addresses with the (checked) part's; unused bytes zero. */
static void meeting_store(account_t *a, const meeting_part_t *m) {
  mem_zero(a->meeting_addresses, sizeof(a->meeting_addresses));
  reader_t r = {m->p, m->len, 0, true};
  for (u64 i = 0; i < m->count; i++) {
    meeting_address_t *e = &a->meeting_addresses[i];
    e->kind = get8(&r);
    e->len = get8(&r);
    mem_copy(e->address, take(&r, e->len), e->len);
  }
  a->meeting_addresses_len = m->count;
}
