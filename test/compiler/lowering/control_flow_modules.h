// HLO modules with while loops and calls whose values the compiled programs compute
// (compiler/lowering/control/control_flow.cc), shared by the value tests and the CLI tests.
#pragma once

namespace tpusim::testing {

// A counted loop (5 trips, `i < 5` from a constant start) whose body multiplies the carried
// h by the carried weight w and adds tanh of it to h: h changes every trip; w passes through.
inline constexpr const char* kDotLoop = R"(HloModule dot_loop, replica_count=8
%cond (s: (s32[], f32[128,128], f32[128,128])) -> pred[] {
  %s = (s32[], f32[128,128]{1,0}, f32[128,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[128,128], f32[128,128])) -> (s32[], f32[128,128], f32[128,128]) {
  %s = (s32[], f32[128,128]{1,0}, f32[128,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %h = f32[128,128]{1,0} get-tuple-element(%s), index=1
  %w = f32[128,128]{1,0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %d = f32[128,128]{1,0} dot(%h, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %t = f32[128,128]{1,0} tanh(%d)
  %u = f32[128,128]{1,0} add(%h, %t)
  ROOT %out = (s32[], f32[128,128]{1,0}, f32[128,128]{1,0}) tuple(%next, %u, %w)
}
ENTRY %main (h: f32[128,128], w: f32[128,128]) -> (f32[128,128], s32[]) {
  %h = f32[128,128]{1,0} parameter(0)
  %w = f32[128,128]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[128,128]{1,0}, f32[128,128]{1,0}) tuple(%zero, %h, %w)
  %loop = (s32[], f32[128,128]{1,0}, f32[128,128]{1,0}) while(%init), condition=%cond, body=%body
  %r = f32[128,128]{1,0} get-tuple-element(%loop), index=1
  %count = s32[] get-tuple-element(%loop), index=0
  ROOT %t = (f32[128,128]{1,0}, s32[]) tuple(%r, %count)
})";

// A loop of 3 trips around a loop of 4 (known_trip_count): the inner one adds x / 2 to acc on
// every trip, the outer one then negates x.
inline constexpr const char* kNestedLoops = R"(HloModule nested, replica_count=8
%inner_body (s: (s32[], f32[8,128], f32[8,128])) -> (s32[], f32[8,128], f32[8,128]) {
  %s = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %acc = f32[8,128]{1,0} get-tuple-element(%s), index=1
  %x = f32[8,128]{1,0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %half = f32[] constant(0.5)
  %halves = f32[8,128]{1,0} broadcast(%half), dimensions={}
  %step = f32[8,128]{1,0} multiply(%x, %halves)
  %sum = f32[8,128]{1,0} add(%acc, %step)
  ROOT %out = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%next, %sum, %x)
}
%inner_cond (s: (s32[], f32[8,128], f32[8,128])) -> pred[] {
  %s = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%j, %n), direction=LT
}
%outer_body (s: (s32[], f32[8,128], f32[8,128])) -> (s32[], f32[8,128], f32[8,128]) {
  %s = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8,128]{1,0} get-tuple-element(%s), index=1
  %acc = f32[8,128]{1,0} get-tuple-element(%s), index=2
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%zero, %acc, %x)
  %inner = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) while(%init), condition=%inner_cond, body=%inner_body, backend_config={"known_trip_count":{"n":"4"}}
  %acc2 = f32[8,128]{1,0} get-tuple-element(%inner), index=1
  %x2 = f32[8,128]{1,0} negate(%x)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %out = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%next, %x2, %acc2)
}
%outer_cond (s: (s32[], f32[8,128], f32[8,128])) -> pred[] {
  %s = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
ENTRY %main (x: f32[8,128], acc: f32[8,128]) -> (f32[8,128], f32[8,128]) {
  %x = f32[8,128]{1,0} parameter(0)
  %acc = f32[8,128]{1,0} parameter(1)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%zero, %x, %acc)
  %outer = (s32[], f32[8,128]{1,0}, f32[8,128]{1,0}) while(%init), condition=%outer_cond, body=%outer_body
  %xs = f32[8,128]{1,0} get-tuple-element(%outer), index=1
  %sums = f32[8,128]{1,0} get-tuple-element(%outer), index=2
  ROOT %t = (f32[8,128]{1,0}, f32[8,128]{1,0}) tuple(%sums, %xs)
})";

// (i, a, b, p, q) -> (i + 1, b, a + b, q, p) six times: the new a is the old b, read after
// a + b is computed; p and q swap (a cycle of copies).
inline constexpr const char* kSwapLoop = R"(HloModule swap, replica_count=8
%cond (s: (s32[], f32[8,256], f32[8,256], f32[8,256], f32[8,256])) -> pred[] {
  %s = (s32[], f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(6)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,256], f32[8,256], f32[8,256], f32[8,256])) -> (s32[], f32[8,256], f32[8,256], f32[8,256], f32[8,256]) {
  %s = (s32[], f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %a = f32[8,256]{1,0} get-tuple-element(%s), index=1
  %b = f32[8,256]{1,0} get-tuple-element(%s), index=2
  %p = f32[8,256]{1,0} get-tuple-element(%s), index=3
  %q = f32[8,256]{1,0} get-tuple-element(%s), index=4
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %sum = f32[8,256]{1,0} add(%a, %b)
  ROOT %out = (s32[], f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%next, %b, %sum, %q, %p)
}
ENTRY %main (a: f32[8,256], b: f32[8,256], p: f32[8,256], q: f32[8,256]) -> (f32[8,256], f32[8,256], f32[8,256], f32[8,256]) {
  %a = f32[8,256]{1,0} parameter(0)
  %b = f32[8,256]{1,0} parameter(1)
  %p = f32[8,256]{1,0} parameter(2)
  %q = f32[8,256]{1,0} parameter(3)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%zero, %a, %b, %p, %q)
  %loop = (s32[], f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) while(%init), condition=%cond, body=%body
  %ra = f32[8,256]{1,0} get-tuple-element(%loop), index=1
  %rb = f32[8,256]{1,0} get-tuple-element(%loop), index=2
  %rp = f32[8,256]{1,0} get-tuple-element(%loop), index=3
  %rq = f32[8,256]{1,0} get-tuple-element(%loop), index=4
  ROOT %t = (f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}, f32[8,256]{1,0}) tuple(%ra, %rb, %rp, %rq)
})";

// A computation of two parameters called twice with its operands swapped, and one returning
// a tuple whose second leaf is a parameter passed through (copied into the call's buffer).
inline constexpr const char* kCalls = R"(HloModule calls, replica_count=8
%f (x: f32[16,128], y: f32[16,128]) -> f32[16,128] {
  %x = f32[16,128]{1,0} parameter(0)
  %y = f32[16,128]{1,0} parameter(1)
  %m = f32[16,128]{1,0} multiply(%x, %y)
  ROOT %s = f32[16,128]{1,0} subtract(%m, %x)
}
%g (x: f32[16,128], y: f32[16,128]) -> (f32[16,128], f32[16,128]) {
  %x = f32[16,128]{1,0} parameter(0)
  %y = f32[16,128]{1,0} parameter(1)
  %e = f32[16,128]{1,0} exponential(%x)
  ROOT %t = (f32[16,128]{1,0}, f32[16,128]{1,0}) tuple(%e, %y)
}
ENTRY %main (a: f32[16,128], b: f32[16,128]) -> (f32[16,128], f32[16,128], f32[16,128], f32[16,128]) {
  %a = f32[16,128]{1,0} parameter(0)
  %b = f32[16,128]{1,0} parameter(1)
  %ab = f32[16,128]{1,0} call(%a, %b), to_apply=%f
  %ba = f32[16,128]{1,0} call(%b, %a), to_apply=%f
  %pair = (f32[16,128]{1,0}, f32[16,128]{1,0}) call(%ab, %a), to_apply=%g
  %e = f32[16,128]{1,0} get-tuple-element(%pair), index=0
  %y = f32[16,128]{1,0} get-tuple-element(%pair), index=1
  ROOT %t = (f32[16,128]{1,0}, f32[16,128]{1,0}, f32[16,128]{1,0}, f32[16,128]{1,0}) tuple(%ab, %ba, %e, %y)
})";

// A loop inside a called computation: the call's result is the loop's state element.
inline constexpr const char* kLoopInCall = R"(HloModule loop_in_call, replica_count=8
%cond (s: (s32[], f32[8,128])) -> pred[] {
  %s = (s32[], f32[8,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,128])) -> (s32[], f32[8,128]) {
  %s = (s32[], f32[8,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[8,128]{1,0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %c = f32[8,128]{1,0} tanh(%x)
  %y = f32[8,128]{1,0} add(%x, %c)
  ROOT %out = (s32[], f32[8,128]{1,0}) tuple(%next, %y)
}
%run (x: f32[8,128], k: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128]{1,0} parameter(0)
  %k = f32[8,128]{1,0} parameter(1)
  %start = f32[8,128]{1,0} multiply(%x, %k)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8,128]{1,0}) tuple(%zero, %start)
  %loop = (s32[], f32[8,128]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[8,128]{1,0} get-tuple-element(%loop), index=1
}
ENTRY %main (x: f32[8,128], k: f32[8,128]) -> f32[8,128] {
  %x = f32[8,128]{1,0} parameter(0)
  %k = f32[8,128]{1,0} parameter(1)
  %c = f32[8,128]{1,0} call(%x, %k), to_apply=%run
  ROOT %e = f32[8,128]{1,0} subtract(%c, %x)
})";

// A scan: trip i writes row i of the carried buffer (dynamic-update-slice at the counter) with
// tanh of the carried row; the update lands in the state itself, as XLA updates in place.
inline constexpr const char* kScanLoop = R"(HloModule scan, replica_count=8
%cond (s: (s32[], f32[8,128], f32[1,128])) -> pred[] {
  %s = (s32[], f32[8,128]{1,0}, f32[1,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(8)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (s32[], f32[8,128], f32[1,128])) -> (s32[], f32[8,128], f32[1,128]) {
  %s = (s32[], f32[8,128]{1,0}, f32[1,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %buf = f32[8,128]{1,0} get-tuple-element(%s), index=1
  %x = f32[1,128]{1,0} get-tuple-element(%s), index=2
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %zero = s32[] constant(0)
  %row = f32[1,128]{1,0} tanh(%x)
  %buf2 = f32[8,128]{1,0} dynamic-update-slice(%buf, %row, %i, %zero)
  ROOT %out = (s32[], f32[8,128]{1,0}, f32[1,128]{1,0}) tuple(%next, %buf2, %row)
}
ENTRY %main (x: f32[1,128]) -> f32[8,128] {
  %x = f32[1,128]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %z = f32[] constant(0)
  %buf = f32[8,128]{1,0} broadcast(%z), dimensions={}
  %init = (s32[], f32[8,128]{1,0}, f32[1,128]{1,0}) tuple(%zero, %buf, %x)
  %loop = (s32[], f32[8,128]{1,0}, f32[1,128]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %r = f32[8,128]{1,0} get-tuple-element(%loop), index=1
})";

}  // namespace tpusim::testing
