import assert from "node:assert/strict";
import { AnnouncementArchive } from "./announcement_archive.ts";

const envelope = (tag: number) => new Uint8Array([tag]);

Deno.test("AnnouncementArchive: envelopes by step, in the order recorded", () => {
  const archive = new AnnouncementArchive();
  archive.record("a", 5, envelope(1));
  archive.record("b", 5, envelope(2));
  archive.record("a", 6, envelope(3));
  assert.deepEqual(archive.envelopes(5), [envelope(1), envelope(2)]);
  assert.deepEqual(archive.envelopes(6), [envelope(3)]);
  assert.deepEqual(archive.envelopes(7), []);
  assert.equal(archive.size, 3);
});

Deno.test("AnnouncementArchive: a flooding sender fills its own share, never another's", () => {
  const archive = new AnnouncementArchive(2);
  assert.equal(archive.record("flood", 1, envelope(1)), true);
  assert.equal(archive.record("flood", 2, envelope(2)), true);
  assert.equal(archive.record("flood", 3, envelope(3)), false);
  assert.equal(archive.record("honest", 3, envelope(4)), true);
  assert.deepEqual(archive.envelopes(3), [envelope(4)]);
  assert.equal(archive.refused, 1);
  assert.throws(() => new AnnouncementArchive(0), RangeError);
});

Deno.test("AnnouncementArchive: forgetting old steps gives their senders their share back", () => {
  const archive = new AnnouncementArchive(2);
  archive.record("a", 1, envelope(1));
  archive.record("a", 2, envelope(2));
  archive.forgetBefore(2);
  assert.deepEqual(archive.envelopes(1), []);
  assert.deepEqual(archive.envelopes(2), [envelope(2)]);
  assert.equal(archive.record("a", 3, envelope(3)), true);
  assert.equal(archive.record("a", 4, envelope(4)), false);
  archive.forgetBefore(10);
  assert.equal(archive.size, 0);
  assert.equal(archive.record("a", 10, envelope(5)), true);
});
