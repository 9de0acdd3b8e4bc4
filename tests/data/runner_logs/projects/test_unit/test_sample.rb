# A test-unit case with each outcome (passed, failure, error, omission, pending), a `test "…"`
# block and a sub_test_case: the source of ruby_unit.log (make_logs.sh).
require "test/unit"
class TestSample < Test::Unit::TestCase
  def test_passes; assert_equal 2, 1 + 1; end
  def test_fails; assert_equal 3, 1 + 1; end
  def test_errors; raise "boom"; end
  def test_omitted; omit("not here"); end
  def test_pending; pend("later"); end
  test "described with spaces" do assert true end
  sub_test_case "nested" do
    def test_inner; assert true; end
  end
end
