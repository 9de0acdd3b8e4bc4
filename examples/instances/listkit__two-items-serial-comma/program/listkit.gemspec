# frozen_string_literal: true

Gem::Specification.new do |spec|
  spec.name = "listkit"
  spec.version = "0.3.1"
  spec.summary = "English lists from arrays: \"a, b, and c\""
  spec.authors = ["listkit contributors"]
  spec.license = "MIT"
  spec.files = Dir["lib/**/*.rb"]
  spec.required_ruby_version = ">= 3.0"
  spec.add_development_dependency "rspec", "~> 3.12"
end
