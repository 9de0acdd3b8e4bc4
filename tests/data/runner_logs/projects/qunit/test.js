// Runner-log fixture: every outcome QUnit's TAP reporter prints, with awkward names.
QUnit.module("Math", function () {
  QUnit.test("adds", function (assert) { assert.strictEqual(1 + 1, 2); });
  QUnit.test("fails: oddly named", function (assert) { assert.strictEqual(1 + 1, 3); });
  QUnit.skip("skipped one", function () {});
  QUnit.todo("todo one", function (assert) { assert.true(false); });
  for (const text of ["a b", "ünï"]) {
    QUnit.test(`each ${text}`, function (assert) { assert.notStrictEqual(text, "ünï"); });
  }
  QUnit.module("nested", function () {
    QUnit.test("throws", function () { throw new TypeError("boom"); });
    QUnit.test("ok 99 looks like a pass", function (assert) { assert.true(true); });
  });
});
QUnit.test("top level", function (assert) { assert.true(true); });
