// Where replicas meet at collectives (EvaluateReplicated): each hands in a value and gets
// every replica's back. A replica that fails or finishes releases the ones waiting.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/eval/evaluator.h"

namespace tpusim::eval {

inline constexpr char kGaveUp[] = "another replica failed before %";

// Every replica's value at one collective, by replica id, shared (not copied) by all of them.
using Exchanged = std::shared_ptr<const std::vector<Value>>;

class Rendezvous {
 public:
  explicit Rendezvous(int64_t n) : n_(n), slots_(n) {}

  Result<Exchanged> Exchange(int64_t id, const std::string& name, Value v) {
    std::unique_lock<std::mutex> lock(mu_);
    if (aborted_) return Failure(name);
    if (arrived_ == 0) name_ = name;
    if (name_ != name) {
      return Fail("replicas reached different collectives %" + name_ + " and %" + name);
    }
    uint64_t generation = generation_;
    slots_[id] = std::move(v);
    if (++arrived_ == n_) {
      result_ = std::make_shared<const std::vector<Value>>(std::move(slots_));
      slots_.assign(n_, Value());
      arrived_ = 0;
      taken_ = 1;
      ++generation_;
      cv_.notify_all();
      return Take();
    }
    if (arrived_ + finished_ == n_) return Fail(Stuck());
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    if (generation_ == generation) return Failure(name);
    ++taken_;
    return Take();
  }

  // A replica failed: the others stop at their next collective.
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

  // A replica finished: replicas waiting for it at a collective can never go on.
  void Finish() {
    std::lock_guard<std::mutex> lock(mu_);
    if (++finished_ + arrived_ == n_ && arrived_ > 0) Fail(Stuck());
  }

 private:
  std::string Stuck() const { return "some replicas finished without reaching %" + name_; }
  // Aborts everyone with `reason` (mu_ held).
  Status Fail(std::string reason) {
    aborted_ = true;
    reason_ = std::move(reason);
    cv_.notify_all();
    return Status::Error(reason_);
  }
  Status Failure(const std::string& name) const {
    return Status::Error(reason_.empty() ? kGaveUp + name : reason_);
  }
  // The finished exchange's values; the last replica to take them drops the rendezvous'
  // reference, so they live only as long as some replica uses them (mu_ held).
  Exchanged Take() {
    Exchanged r = result_;
    if (taken_ == n_) result_.reset();
    return r;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t n_;
  int64_t arrived_ = 0, finished_ = 0, taken_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::string name_, reason_;
  std::vector<Value> slots_;
  Exchanged result_;
};

}  // namespace tpusim::eval
