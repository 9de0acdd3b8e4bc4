# frozen_string_literal: true

# Generated tests for ListKit::Sentence.join.
RSpec.describe ListKit::Sentence do
  it "joins two items with 'and'" do
    expect(ListKit::Sentence.join(%w[apples pears])).to eq("apples and pears")
  end

  it "leaves out nil items" do
    expect(ListKit::Sentence.join(["a", nil, "b"])).to eq("a and b")
  end
end
