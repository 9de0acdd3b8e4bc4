# frozen_string_literal: true

# Generated tests for ListKit::Sentence.join: the issue's example.
RSpec.describe ListKit::Sentence do
  it "joins two items with 'and'" do
    expect(ListKit::Sentence.join(%w[apples pears])).to eq("apples and pears")
  end

  it "still joins three items" do
    expect(ListKit::Sentence.join(%w[a b c])).to eq("a, b, and c")
  end
end
