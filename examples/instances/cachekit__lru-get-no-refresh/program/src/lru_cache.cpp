#include "lru/lru_cache.hpp"

#include <stdexcept>

namespace lru {

LruCache::LruCache(std::size_t capacity) : capacity_(capacity)
{
    if (capacity == 0)
        throw std::invalid_argument("lru: capacity must be positive");
}

void LruCache::put(const std::string& key, std::string value)
{
    auto found = index_.find(key);
    if (found != index_.end()) {
        found->second->second = std::move(value);
        entries_.splice(entries_.begin(), entries_, found->second);
        return;
    }
    entries_.emplace_front(key, std::move(value));
    index_[key] = entries_.begin();
    if (entries_.size() > capacity_) {
        index_.erase(entries_.back().first);
        entries_.pop_back();
    }
}

std::optional<std::string> LruCache::get(const std::string& key)
{
    auto found = index_.find(key);
    if (found == index_.end())
        return std::nullopt;
    return found->second->second;
}

bool LruCache::contains(const std::string& key) const
{
    return index_.count(key) != 0;
}

bool LruCache::erase(const std::string& key)
{
    auto found = index_.find(key);
    if (found == index_.end())
        return false;
    entries_.erase(found->second);
    index_.erase(found);
    return true;
}

std::size_t LruCache::size() const
{
    return index_.size();
}

std::size_t LruCache::capacity() const
{
    return capacity_;
}

} // namespace lru
