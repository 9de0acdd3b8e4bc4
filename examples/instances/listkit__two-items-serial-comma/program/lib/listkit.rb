# frozen_string_literal: true

require_relative "listkit/sentence"
require_relative "listkit/version"
