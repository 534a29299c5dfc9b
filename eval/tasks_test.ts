import assert from "node:assert/strict";
import { EvalDataError } from "./errors.ts";
import { hellaswagPreprocess, TASKS, tasksNamed } from "./tasks.ts";

const task = (name: string) => TASKS.get(name)!;

Deno.test("hellaswag: the harness's WikiHow cleanup and context", () => {
  assert.equal(
    hellaswagPreprocess(" How to cook [title] Boil water. [step] Then  stir "),
    "How to cook. Boil water. Then stir",
  );
  const doc = task("hellaswag").toDocument({
    activity_label: "Baking cookies",
    ctx_a: "A woman mixes dough.",
    ctx_b: "SHE then",
    endings: ["bakes it.", "eats it [title] raw.", "leaves.", "sings."],
    label: "1",
  });
  assert.equal(doc.context, "Baking cookies: A woman mixes dough. She then");
  assert.deepEqual(doc.choices, ["bakes it.", "eats it. raw.", "leaves.", "sings."]);
  assert.equal(doc.answer, 1);
});

Deno.test("arc and openbookqa: labelled choices, answer by key", () => {
  const row = {
    question: "What falls?",
    question_stem: "What falls?",
    choices: { text: ["rain", "sky", "sun"], label: ["A", "B", "C"] },
    answerKey: "A",
  };
  const arc = task("arc_easy").toDocument(row);
  assert.equal(arc.context, "Question: What falls?\nAnswer:");
  assert.deepEqual(arc.choices, ["rain", "sky", "sun"]);
  assert.equal(arc.answer, 0);
  assert.equal(task("arc_challenge").subset, "ARC-Challenge");
  const obqa = task("openbookqa").toDocument({ ...row, answerKey: " C" });
  assert.equal(obqa.context, "What falls?");
  assert.equal(obqa.answer, 2);
});

Deno.test("piqa, boolq and mmlu frame their prompts as the harness does", () => {
  const piqa = task("piqa").toDocument({
    goal: "Open a jar",
    sol1: "twist",
    sol2: "bite",
    label: 0n,
  });
  assert.equal(piqa.context, "Question: Open a jar\nAnswer:");
  assert.equal(piqa.answer, 0);
  const boolq = task("boolq").toDocument({
    passage: "Cats purr.",
    question: "do cats purr",
    answer: true,
  });
  assert.equal(boolq.context, "Cats purr.\nQuestion: do cats purr?\nAnswer:");
  assert.deepEqual(boolq.choices, ["no", "yes"]);
  assert.equal(boolq.answer, 1);
  const mmlu = task("mmlu").toDocument({
    question: " 2+2? ",
    subject: "elementary_mathematics",
    choices: ["3", "4", "5", "6"],
    answer: 1,
  });
  assert.equal(mmlu.context, "2+2?\nA. 3\nB. 4\nC. 5\nD. 6\nAnswer:");
  assert.deepEqual(mmlu.choices, ["A", "B", "C", "D"]);
  assert.equal(mmlu.answer, 1);
  assert.equal(
    mmlu.description,
    "The following are multiple choice questions (with answers) about elementary mathematics.\n\n",
  );
});

Deno.test("a malformed row names the field and what was found", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "hellaswag",
      { activity_label: "a", ctx_a: "b", ctx_b: "c", endings: ["x", "y"] },
      /no "label" field/,
    ],
    [
      "hellaswag",
      { activity_label: "a", ctx_a: "b", ctx_b: "c", endings: ["x", "y"], label: "7" },
      /"label" should be an answer index below 2, found "7"/,
    ],
    ["arc_easy", {
      question: "q",
      choices: { text: ["a", "b"], label: ["A", "B"] },
      answerKey: "E",
    }, /"answerKey" is "E", not one of the labels A,B/],
    [
      "boolq",
      { passage: "p", question: "q", answer: "yes" },
      /"answer" should be true or false, found "yes"/,
    ],
    ["piqa", { goal: 3, sol1: "a", sol2: "b", label: 0 }, /"goal" should be text, found number 3/],
    [
      "mmlu",
      { question: "q", subject: "s", choices: ["a", "b"], answer: 0 },
      /should hold 4 options, found 2/,
    ],
  ];
  for (const [name, row, message] of cases) {
    assert.throws(
      () => task(name).toDocument(row),
      (e: Error) => e instanceof EvalDataError && message.test(e.message),
      name,
    );
  }
});

Deno.test("task lists: in order, once each, unknown names listed", () => {
  assert.deepEqual(tasksNamed("ARC_easy, hellaswag,arc_easy").map((t) => t.name), [
    "arc_easy",
    "hellaswag",
  ]);
  assert.throws(
    () => tasksNamed("hellaswag,winogrande"),
    /unknown task "winogrande" \(known: hellaswag, arc_easy/,
  );
  assert.throws(() => tasksNamed(" , "), /no task named/);
});
