"""Print the manifest of a crate that depends on exactly the registry packages of a Cargo.lock,
so that `cargo vendor` of it (at image build time, the one networked step) gathers
every crate the lock pins. Each dependency is renamed (`d<n>`), since a lock may pin two
versions of one crate (syn 1 and 2); default features are off, so that nothing outside the
lock is asked for. Run by tokio.Dockerfile, which cannot read the program: the lock stands in
for it (one stub a lock: two locks pin semver-compatible versions of one crate, which one
graph cannot hold)."""

import sys
import tomllib

with open(sys.argv[1], "rb") as lock:
    pins = sorted((p["name"], p["version"]) for p in tomllib.load(lock)["package"]
                  if p.get("source", "").startswith("registry+"))
print('[package]\nname = "lock-stub"\nversion = "0.0.0"\nedition = "2018"\n\n[dependencies]')
for n, (name, version) in enumerate(pins):
    print(f'd{n} = {{ package = "{name}", version = "={version}", default-features = false }}')
