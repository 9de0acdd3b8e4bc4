// Runner-log fixture: every outcome Mocha reports, with awkward names.
const assert = require("assert");
describe("math", function () {
  it("adds", function () { assert.strictEqual(1 + 1, 2); });
  it("fails: oddly named", function () { assert.strictEqual(1 + 1, 3); });
  it.skip("skipped one", function () {});
  it("pending without body");
  for (const text of ["a b", "ünï"]) {
    it(`each ${text}`, function () { assert.notStrictEqual(text, "ünï"); });
  }
  describe("nested", function () {
    it("throws", function () { throw new TypeError("boom"); });
    it("✓ looks like a pass", function () {});
  });
  describe("hooks", function () {
    before(function () { throw new Error("hook broke"); });
    it("never runs", function () {});
  });
});
it("top level", function () {});
