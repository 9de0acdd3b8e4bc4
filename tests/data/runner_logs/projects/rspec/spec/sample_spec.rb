# Runner-log fixture: every outcome RSpec reports, with awkward names.
RSpec.describe "Math" do
  it "adds" do
    expect(1 + 1).to eq(2)
  end

  it "fails: oddly named" do
    expect(1 + 1).to eq(3)
  end

  it "raises" do
    raise TypeError, "boom"
  end

  it "is skipped", skip: "not today" do
  end

  it "is pending" do
    pending("known bug")
    raise "still broken"
  end

  ["a b", "ünï"].each do |text|
    it "each #{text}" do
      expect(text).not_to eq("ünï")
    end
  end

  context "nested" do
    it "passes" do
      expect(true).to be(true)
    end
  end
end
