// Cycle-by-cycle reference model of a weight-stationary R x C systolic array, used only
// by tests to check the MXU's closed-form timing (sim/timing.h) and its values.
//
// PE (k, n) holds weight W[k][n] (one of two banks: active and shadow). LHS element
// x[i][k] enters row k at cycle start + i + k (skewed input) and moves right one PE per
// cycle; partial sums move down one PE per cycle. PE (k, n) therefore sees x[i][k] at
// cycle start + i + k + n and the result (i, n) leaves the bottom of column n at the end
// of cycle start + i + (R - 1) + n. It is written to the accumulators after
// `output_stages` more registers (0 by default: written at the end of that same cycle).
//
// Every PE has an activation register and a partial-sum register, each tagged with the
// (matmul, row, weight bank) it belongs to; step() advances all of them by one cycle and
// checks that the activation and the partial sum meeting in a PE carry the same tag.
// Nothing here uses the closed-form formulas.
//
// Weights: SetWeights() fills the shadow bank instantly (a load finished before cycle 0);
// StartWeightLoad() fills it one weight row per cycle once the shadow bank is free. A
// matmul queued after a load latches that tile (swaps banks) when its first row enters,
// waiting while it is still loading; otherwise it reuses the active bank. Each row carries
// its bank, so the swap travels with the data wavefront. Writing a bank that a row still
// in flight needs throws (a weight hazard).
#pragma once

#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::sim::testing {

using Matrix = std::vector<std::vector<float>>;  // [row][col]

class SystolicArray {
 public:
  struct MatmulRecord {
    int64_t rows = 0;
    int64_t first_entry = -1;  // cycle the first LHS row entered row 0 of the array
    int64_t last_entry = -1;   // cycle the last LHS row entered row 0
    int64_t last_write = -1;   // cycle at whose end the last result reached the accumulators
    int64_t writes = 0;        // results written so far (rows * C when done)
    int bank = -1;             // weight bank the matmul used
    Matrix out;                // rows x C accumulator contents
  };

  SystolicArray(int rows, int cols, int output_stages = 0)
      : R_(rows),
        C_(cols),
        stages_(output_stages),
        w_(2, std::vector<float>(static_cast<size_t>(rows) * cols, 0.f)),
        act_(static_cast<size_t>(rows) * cols),
        psum_(static_cast<size_t>(rows) * cols),
        out_pipe_(static_cast<size_t>(output_stages) * cols) {
    if (rows < 1 || cols < 1 || output_stages < 0) throw std::invalid_argument("bad array shape");
  }

  int rows() const { return R_; }
  int cols() const { return C_; }
  int64_t cycle() const { return cycle_; }  // the next cycle step() will simulate

  // Fills the shadow bank at once (zero-padded to R x C) and marks it staged.
  void SetWeights(const Matrix& w) {
    if (loading_ || staged_ || load_requested_) throw std::logic_error("shadow bank busy");
    std::vector<float> padded = Pad(w);
    for (int k = 0; k < R_; ++k) WriteShadowRow(k, padded);
    staged_ = true;
    ++loads_requested_;
  }

  // Requests a load of `w` (zero-padded to R x C) into the shadow bank, one weight row
  // per cycle. It starts in the first step() where the shadow bank is free (at once, or
  // when a queued matmul latches the tile staged before it, as the MXU's staging_free_).
  void StartWeightLoad(const Matrix& w) {
    if (loading_ || load_requested_) throw std::logic_error("a weight load is pending");
    load_ = Pad(w);
    load_requested_ = true;
    ++loads_requested_;
  }
  bool loading() const { return loading_ || load_requested_; }
  int64_t load_start() const { return load_start_; }  // cycle the first weight row is written
  int64_t load_done() const { return load_done_; }    // cycle after the last row is written

  // Queues a matmul of x (M x K', K' <= R, zero-padded to R). Rows enter back to back.
  int EnqueueMatmul(const Matrix& x) {
    if (x.empty()) throw std::invalid_argument("matmul needs at least one row");
    Pending p;
    p.id = static_cast<int>(mm_.size());
    p.loads_before = loads_requested_;
    for (const auto& row : x) {
      if (static_cast<int>(row.size()) > R_) throw std::invalid_argument("LHS row too long");
      std::vector<float> padded(R_, 0.f);
      for (size_t k = 0; k < row.size(); ++k) padded[k] = row[k];
      p.x.push_back(std::move(padded));
    }
    MatmulRecord rec;
    rec.rows = static_cast<int64_t>(x.size());
    rec.out.assign(x.size(), std::vector<float>(C_, 0.f));
    mm_.push_back(std::move(rec));
    queue_.push_back(std::move(p));
    return queue_.back().id;
  }

  const MatmulRecord& matmul(int id) const { return mm_.at(id); }

  bool Idle() const {
    if (!queue_.empty() || loading_ || load_requested_) return false;
    for (const auto& m : mm_)
      if (m.writes != m.rows * C_) return false;
    return true;
  }

  // Steps until idle; returns the number of cycles simulated. Throws past `max_cycles`.
  int64_t Run(int64_t max_cycles = 1'000'000) {
    int64_t n = 0;
    while (!Idle()) {
      if (n++ >= max_cycles) throw std::runtime_error("systolic array did not drain");
      Step();
    }
    return n;
  }

  // Simulates one cycle (cycle()): input entry, all PE MACs, result writes, weight load.
  void Step() {
    const int64_t t = cycle_;
    // 1. Row 0 input: the next LHS row of the head matmul, or a bubble.
    Tag entry;
    if (!queue_.empty()) {
      Pending& p = queue_.front();
      bool can_enter = true;
      if (p.next_row == 0) {
        if (loads_latched_ < p.loads_before) {  // a load precedes this matmul: latch it
          if (staged_) {
            active_ ^= 1;  // the shadow bank becomes active for this and later rows
            staged_ = false;
            ++loads_latched_;
          } else {
            can_enter = false;  // the tile is still loading
          }
        } else if (!has_active_) {
          throw std::logic_error("matmul before any weights were loaded");
        }
        if (can_enter) {
          has_active_ = true;
          mm_[p.id].first_entry = t;
          mm_[p.id].bank = active_;
        }
      }
      if (can_enter) {
        entry = Tag{p.id, p.next_row, active_};
        entry_x_.push_back(p.x[p.next_row]);
        mm_[p.id].last_entry = t;
        if (++p.next_row == static_cast<int>(p.x.size())) queue_.pop_front();
      }
    }
    if (!entry.valid()) entry_x_.push_back({});
    entries_.push_back(entry);

    // 2. Every PE: activation from the left (or the skewed input), partial sum from
    // above (or 0), MAC with its weight; results latch into the registers at cycle end.
    std::vector<Reg> act(act_.size()), psum(psum_.size());
    for (int k = 0; k < R_; ++k) {
      for (int n = 0; n < C_; ++n) {
        Reg a;
        if (n == 0) {
          int64_t e = t - k;  // the row that entered row 0 at cycle e reaches row k now
          if (e >= 0 && entries_[e].valid()) a = Reg{entry_x_[e][k], entries_[e]};
        } else {
          a = act_[Idx(k, n - 1)];
        }
        Reg p = k == 0 ? Reg{0.f, a.tag} : psum_[Idx(k - 1, n)];
        if (a.tag.valid() != p.tag.valid() || (a.tag.valid() && !(a.tag == p.tag)))
          throw std::logic_error("skew broken at PE (" + std::to_string(k) + ", " +
                                 std::to_string(n) + ") cycle " + std::to_string(t));
        act[Idx(k, n)] = a;
        if (a.tag.valid())
          psum[Idx(k, n)] = Reg{p.value + a.value * w_[a.tag.bank][Idx(k, n)], a.tag};
      }
    }
    act_.swap(act);
    psum_.swap(psum);

    // 3. Bottom of each column -> `stages_` output registers -> accumulator.
    for (int n = 0; n < C_; ++n) {
      Reg r = psum_[Idx(R_ - 1, n)];
      for (int s = 0; s < stages_; ++s) std::swap(r, out_pipe_[s * C_ + n]);
      if (r.tag.valid()) {
        MatmulRecord& m = mm_[r.tag.mm];
        m.out[r.tag.row][n] = r.value;
        ++m.writes;
        m.last_write = t;
      }
    }

    // 4. Weight load: one row of the shadow bank, written at the end of this cycle.
    if (load_requested_ && !staged_) {
      load_requested_ = false;
      loading_ = true;
      load_row_ = 0;
      load_start_ = t;
    }
    if (loading_) {
      WriteShadowRow(load_row_, load_);
      if (++load_row_ == R_) {
        loading_ = false;
        staged_ = true;
        load_done_ = t + 1;
      }
    }
    ++cycle_;
  }

 private:
  struct Tag {
    int mm = -1, row = -1, bank = -1;
    bool valid() const { return mm >= 0; }
    bool operator==(const Tag& o) const { return mm == o.mm && row == o.row && bank == o.bank; }
  };
  struct Reg {
    float value = 0.f;
    Tag tag;
  };
  struct Pending {
    int id = 0;
    int next_row = 0;
    int loads_before = 0;  // weight loads requested before this matmul
    std::vector<std::vector<float>> x;
  };

  size_t Idx(int k, int n) const { return static_cast<size_t>(k) * C_ + n; }

  std::vector<float> Pad(const Matrix& w) const {
    if (static_cast<int>(w.size()) > R_) throw std::invalid_argument("weight tile too tall");
    std::vector<float> padded(static_cast<size_t>(R_) * C_, 0.f);
    for (size_t k = 0; k < w.size(); ++k) {
      if (static_cast<int>(w[k].size()) > C_) throw std::invalid_argument("weight tile too wide");
      for (size_t n = 0; n < w[k].size(); ++n) padded[Idx(static_cast<int>(k), n)] = w[k][n];
    }
    return padded;
  }

  // Writes weight row k of the shadow bank (visible from the next cycle on). A row that
  // entered at cycle e uses PE (k, n) at e + k + n, so any row on that bank that entered
  // at e >= cycle - k - (C - 1) + 1 still needs the old weights: a hazard.
  void WriteShadowRow(int k, const std::vector<float>& src) {
    int shadow = active_ ^ 1;
    for (int64_t e = static_cast<int64_t>(entries_.size()) - 1; e >= 0 && e + k + C_ - 1 > cycle_;
         --e)
      if (entries_[e].valid() && entries_[e].bank == shadow)
        throw std::logic_error("weight hazard: row " + std::to_string(k) + " of bank " +
                               std::to_string(shadow) + " written at cycle " +
                               std::to_string(cycle_) + " while still in use");
    for (int n = 0; n < C_; ++n) w_[shadow][Idx(k, n)] = src[Idx(k, n)];
  }

  int R_, C_, stages_;
  std::vector<std::vector<float>> w_;  // two banks of R x C weights
  int active_ = 1;                     // the first latch makes bank 0 active
  bool has_active_ = false, staged_ = false, loading_ = false, load_requested_ = false;
  int load_row_ = 0, loads_requested_ = 0, loads_latched_ = 0;
  int64_t load_start_ = -1, load_done_ = -1;
  std::vector<float> load_;
  std::vector<Reg> act_, psum_, out_pipe_;
  std::vector<Tag> entries_;  // per cycle: the row that entered row 0 (or a bubble)
  std::vector<std::vector<float>> entry_x_;
  std::deque<Pending> queue_;
  std::vector<MatmulRecord> mm_;
  int64_t cycle_ = 0;
};

}  // namespace tpusim::sim::testing
