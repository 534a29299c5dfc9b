import assert from "node:assert/strict";
import { PendingReplies } from "./pending_replies.ts";

Deno.test("PendingReplies: each reply settles its own request, once", async () => {
  const book = new PendingReplies<string>();
  const a = book.open(0), b = book.open(1);
  assert.notEqual(a.id, b.id);
  assert.equal(book.size, 2);
  book.settle(b.id, { value: "b" });
  book.settle(a.id, { error: new RangeError("bad a") });
  assert.equal(await b.reply, "b");
  await assert.rejects(a.reply, RangeError);
  // A late or repeated reply, or one to no request, changes nothing.
  book.settle(b.id, { value: "again" });
  book.settle(99, { value: "stray" });
  assert.equal(book.size, 0);
});

Deno.test("PendingReplies: a failed worker fails only its own requests; failAll the rest", async () => {
  const book = new PendingReplies<number>();
  const first = book.open(0), second = book.open(1), third = book.open(0);
  book.failWorker(0, new Error("worker 0 died"));
  await assert.rejects(first.reply, /worker 0 died/);
  await assert.rejects(third.reply, /worker 0 died/);
  assert.equal(book.size, 1);
  book.settle(first.id, { value: 1 }); // the dead worker's late reply is dropped
  const fourth = book.open(1);
  book.failAll(new Error("closed"));
  await assert.rejects(second.reply, /closed/);
  await assert.rejects(fourth.reply, /closed/);
  assert.equal(book.size, 0);
});
