# frozen_string_literal: true

RSpec.describe ListKit::Sentence, ".join" do
  it "joins three items" do
    expect(described_class.join(%w[red green blue])).to eq("red, green, and blue")
  end

  it "returns an empty string for an empty list" do
    expect(described_class.join([])).to eq("")
  end
end
