// A test file that cannot load: Jest reports the file, not a test.
require("./does-not-exist");
test("never runs", () => {});
