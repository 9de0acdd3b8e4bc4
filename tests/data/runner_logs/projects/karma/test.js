// Runner-log fixture: every outcome karma-mocha-reporter prints, with awkward names, nested
// describe blocks and a test of the same title in two blocks.
function equal(a, b) { if (a !== b) throw new Error(a + " !== " + b); }
describe("render()", function () {
  it("adds", function () { equal(1 + 1, 2); });
  it("fails: oddly named", function () { equal(1 + 1, 3); });
  it.skip("skipped one", function () {});
  describe("nested", function () {
    it("adds", function () { equal(2 + 2, 4); });
    it("throws", function () { throw new TypeError("boom"); });
    it("✔ looks like a pass", function () {});
  });
  it("after nested", function () {});
});
describe("hydrate()", function () {
  it("ünï", function () {});
});
