// bert-base (masked-LM pre-training) and transformer-layer (one encoder layer).
// BERT-base: 12 layers, hidden 768, 12 heads, intermediate 3072, sequence 128, vocabulary
// 30522, 20 masked positions per sequence; word embeddings tied to the MLM output layer.
// Not modelled: dropout, the attention padding mask, the next-sentence head.
#include <cmath>
#include <string>

#include "compiler/model/model_zoo.h"

namespace tpusim::model {
namespace {

struct BertSize {
  int64_t layers, hidden, heads, intermediate, sequence, vocab, masked;
};

BertSize SizeOf(const ModelContext& ctx) {
  if (ctx.tiny()) return {2, 8, 2, 16, 4, 12, 2};
  return {12, 768, 12, 3072, 128, 30522, 20};
}

// x [B*S, H] -> [B*S, H].
Op EncoderLayer(ModelContext& ctx, Op x, const BertSize& size, const std::string& name) {
  const int64_t b = ctx.batch(), s = size.sequence, h = size.hidden, n = size.heads;
  const int64_t d = h / n;  // width of a head
  auto heads = [&](const std::string& w) {
    return Reshape(Dense(ctx, x, h, name + "_" + w), {b, s, n, d});
  };
  Op q = heads("query"), k = heads("key"), v = heads("value");
  // scores[b, n, s_q, s_k] = q . k / sqrt(d), softmax over s_k in the accumulation type.
  Op scores = DotGeneral(
      q, k,
      {.lhs_batch = {0, 2}, .rhs_batch = {0, 2}, .lhs_contracting = {3}, .rhs_contracting = {3}},
      ctx.accumulate_type());
  Op probs = ConvertTo(Softmax(scores * (1.0 / std::sqrt(double(d)))), ctx.dtype());
  Op context = DotGeneral(
      probs, v,
      {.lhs_batch = {0, 1}, .rhs_batch = {0, 2}, .lhs_contracting = {3}, .rhs_contracting = {1}},
      ctx.accumulate_type());  // [b, n, s, d]
  context = Reshape(Transpose(ConvertTo(context, ctx.dtype()), {0, 2, 1, 3}), {b * s, h});
  Op attended = LayerNorm(ctx, x + Dense(ctx, context, h, name + "_attention_output"),
                          name + "_attention_norm");
  Op ffn = Dense(ctx, Gelu(Dense(ctx, attended, size.intermediate, name + "_intermediate")), h,
                 name + "_output");
  return LayerNorm(ctx, attended + ffn, name + "_output_norm");
}

}  // namespace

ForwardResult BertBaseForward(ModelContext& ctx) {
  const BertSize size = SizeOf(ctx);
  const int64_t b = ctx.batch(), s = size.sequence, h = size.hidden, p = size.masked;
  const PrimitiveType s32 = PrimitiveType::kS32;
  Op tokens = ctx.Input("tokens", s32, {b, s});
  Op segments = ctx.Input("segment_ids", s32, {b, s});
  Op positions = ctx.Input("masked_positions", s32, {b, p});
  Op labels = ctx.Labels({b * p});
  Op word_table = ctx.Weight("word_embeddings", {size.vocab, h});
  Op x = GatherRows(word_table, tokens) +
         Broadcast(ctx.Weight("position_embeddings", {s, h}), {b, s, h}, {1, 2}) +
         GatherRows(ctx.Weight("segment_embeddings", {2, h}), segments);
  x = LayerNorm(ctx, Reshape(x, {b * s, h}), "embeddings_norm");
  for (int64_t l = 0; l < size.layers; ++l) {
    x = EncoderLayer(ctx, x, size, "layer" + std::to_string(l));
  }
  // Masked-LM head on the masked positions: row b*S + position of the [B*S, H] activations.
  Op row_base = Iota(ctx.builder(), Shape::Array(s32, {b, p}), 0) *
                Full(ctx.builder(), s32, {b, p}, double(s));
  Op masked = Reshape(GatherRows(x, row_base + positions), {b * p, h});
  masked = LayerNorm(ctx, Gelu(Dense(ctx, masked, h, "mlm_transform")), "mlm_norm");
  Op logits = DotGeneral(masked, word_table, {.lhs_contracting = {1}, .rhs_contracting = {1}},
                         ctx.accumulate_type());
  logits = ConvertTo(logits, ctx.dtype()) +
           Broadcast(ctx.Weight("mlm_output_bias", {size.vocab}), {b * p, size.vocab}, {1});
  return {logits, labels, p};
}

ForwardResult TransformerLayerForward(ModelContext& ctx) {
  const BertSize size = SizeOf(ctx);
  constexpr int64_t kClasses = 2;  // a per-token binary classifier gives the layer a loss
  const int64_t b = ctx.batch(), s = size.sequence, h = size.hidden;
  Op x = ctx.Input("activations", ctx.dtype(), {b, s, h});
  Op labels = ctx.Labels({b * s});
  Op y = EncoderLayer(ctx, Reshape(x, {b * s, h}), size, "layer");
  return {Dense(ctx, y, kClasses, "classifier"), labels, s};
}

}  // namespace tpusim::model
