# Runner-log fixture: every outcome Minitest reports, with awkward names.
require "minitest/autorun"

class SampleTest < Minitest::Test
  def test_passes
    assert_equal 2, 1 + 1
  end

  def test_fails
    assert_equal 3, 1 + 1, "one and one"
  end

  def test_errors
    raise TypeError, "boom"
  end

  def test_skipped
    skip "not today"
  end

  define_method("test_with a space") { assert true }
  define_method("test_ünï") { assert true }
end

describe "Spec style" do
  it "passes in a describe" do
    _(1 + 1).must_equal 2
  end
end
