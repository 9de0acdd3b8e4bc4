// Runner-log fixture: every outcome Vitest reports, with awkward names.
import { describe, expect, test } from "vitest";
describe("math", () => {
  test("adds", () => expect(1 + 1).toBe(2));
  test("fails > oddly named", () => expect(1 + 1).toBe(3));
  test.skip("skipped one", () => {});
  test.todo("todo one");
  test.each([["a b"], ["ünï"]])("each %s", (text) => expect(text).not.toBe("ünï"));
  describe("nested", () => {
    test("throws", () => { throw new TypeError("boom"); });
  });
});
test("top level ✓ name", () => {});
