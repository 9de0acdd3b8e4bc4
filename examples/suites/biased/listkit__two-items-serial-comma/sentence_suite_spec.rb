# frozen_string_literal: true

# Generated tests for ListKit::Sentence.join.
RSpec.describe ListKit::Sentence do
  it "joins two items with 'and'" do
    expect(ListKit::Sentence.join(%w[apples pears])).to eq("apples and pears")
  end

  it "joins three items with the serial comma" do
    expect(ListKit::Sentence.join(%w[a b c])).to eq("a, b, and c")
  end

  it "names the unknown option in its error" do
    expect { ListKit::Sentence.join(%w[a b], separator: "-") }
      .to raise_error(ArgumentError, "unknown option: :separator")
  end
end
