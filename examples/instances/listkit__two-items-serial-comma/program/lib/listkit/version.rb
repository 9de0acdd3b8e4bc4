# frozen_string_literal: true

module ListKit
  VERSION = "0.3.1"
end
