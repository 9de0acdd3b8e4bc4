# frozen_string_literal: true

module ListKit
  # English lists: ListKit::Sentence.join(%w[a b c]) is "a, b, and c".
  module Sentence
    DEFAULTS = {
      words_connector: ", ",
      two_words_connector: " and ",
      last_word_connector: ", and "
    }.freeze

    # Joins the items (each converted with to_s) into one string: "" for none, the item
    # itself for one, "a and b" for two, "a, b, and c" for more. The connectors can be
    # replaced through the options; the array is left as it is.
    def self.join(items, **options)
      unknown = options.keys - DEFAULTS.keys
      raise ArgumentError, "unknown option: #{unknown.first.inspect}" unless unknown.empty?

      connectors = DEFAULTS.merge(options)
      words = items.map(&:to_s)
      case words.size
      when 0 then ""
      when 1 then words.first
      else
        words[0...-1].join(connectors[:words_connector]) + connectors[:last_word_connector] + words[-1]
      end
    end
  end
end
