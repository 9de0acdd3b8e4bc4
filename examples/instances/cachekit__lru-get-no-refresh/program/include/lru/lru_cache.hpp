// lru::LruCache: a string-to-string cache of fixed capacity that evicts the least recently
// used entry. An entry is used when it is stored (put) or read (get); looking at the cache
// (contains, size) uses nothing.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace lru {

class LruCache {
public:
    // Throws std::invalid_argument when capacity is 0.
    explicit LruCache(std::size_t capacity);

    // Stores value under key, replacing the value stored there; the entry becomes the most
    // recently used. When that makes more than capacity() entries, the least recently used
    // entry is evicted.
    void put(const std::string& key, std::string value);
    // The value stored under key, which becomes the most recently used entry; nullopt when
    // there is none.
    std::optional<std::string> get(const std::string& key);
    // Whether key is stored; not a use of its entry.
    bool contains(const std::string& key) const;
    // Removes the entry of key; whether there was one.
    bool erase(const std::string& key);

    std::size_t size() const;
    std::size_t capacity() const;

private:
    using Entry = std::pair<std::string, std::string>;

    std::size_t capacity_;
    std::list<Entry> entries_; // most recently used first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

} // namespace lru
