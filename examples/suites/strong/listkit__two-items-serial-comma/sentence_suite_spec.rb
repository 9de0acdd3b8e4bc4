# frozen_string_literal: true

# Generated tests for ListKit::Sentence.join: two items take the two-words connector.
RSpec.describe ListKit::Sentence do
  describe ".join" do
    it "joins the issue's two items with 'and'" do
      expect(described_class.join(%w[apples pears])).to eq("apples and pears")
    end

    it "converts two non-string items" do
      expect(described_class.join([:a, 2])).to eq("a and 2")
    end

    it "takes two_words_connector for two items only" do
      options = { two_words_connector: " plus ", last_word_connector: " and finally " }
      expect(described_class.join(%w[a b], **options)).to eq("a plus b")
      expect(described_class.join(%w[a b c], **options)).to eq("a, b and finally c")
    end

    it "gives an empty string for an empty list" do
      result = described_class.join([])
      expect(result).to be_a(String)
      expect(result).to be_empty
    end

    it "gives one item back as a string" do
      expect(described_class.join([7])).to eq("7")
      expect(described_class.join([nil])).to eq("")
    end

    it "keeps the serial comma from three items on" do
      expect(described_class.join(%w[a b c])).to eq("a, b, and c")
      expect(described_class.join(%w[a b c d e])).to eq("a, b, c, d, and e")
    end

    it "takes words_connector between the first items" do
      expect(described_class.join(%w[a b c d], words_connector: " / ")).to eq("a / b / c, and d")
    end

    it "does not change the array it is given" do
      items = %w[a b c d]
      described_class.join(items)
      expect(items).to eq(%w[a b c d])
      expect(described_class.join(%w[a b].freeze)).to eq("a and b")
    end

    it "raises ArgumentError for an option it does not know" do
      expect { described_class.join(%w[a b], separator: "-") }.to raise_error(ArgumentError)
    end
  end
end
