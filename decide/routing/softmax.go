package routing

import (
	"math"

	"github.com/hintstream/hintstream/schemas"
	"github.com/zeebo/xxh3"
)

// Sampler returns the uniform draw in [0, 1) that decides a softmax choice
// for req (Dynamo draws rand::rng().random() there). It must be safe for
// concurrent use. Only temperatures above 0 draw.
type Sampler func(req *schemas.RequestEvent) float64

// RequestIDSampler draws from the request id alone: the top 53 bits of
// XXH3-64(request_id, seed) divided by 2^53. Every instance, and a replay,
// thus draws the same number for the same request and picks the same
// worker from the same state. With seed 0 the hash is the one in the
// hint's message_id ("wake-" + its 16 hex digits), so a choice can be
// re-derived from a received hint.
func RequestIDSampler(seed uint64) Sampler {
	return func(req *schemas.RequestEvent) float64 {
		return float64(xxh3.HashStringSeed(req.RequestID, seed)>>11) / (1 << 53)
	}
}

// softmaxProbs is the distribution of Dynamo's softmax_sample over logits
// (lower is better), ported from the overlap_score_weight-era
// lib/kv-router/src/scheduling/selector.rs (ai-dynamo/dynamo; before that
// lib/llm/src/kv_router/scheduler.rs), operation for operation so the
// floats match:
//
//	equal min and max → uniform;
//	else scaled_i = -(v_i / (max - min)) / temperature,
//	     p_i = exp(scaled_i - max(scaled)) / sum_j exp(scaled_j - max(scaled)).
//
// Dividing by the range makes the temperature independent of the logits'
// scale: at temperature 1 the worst candidate is e times less likely than
// the best, whatever the loads.
func softmaxProbs(logits []float64, temperature float64) []float64 {
	probs := make([]float64, len(logits))
	if len(logits) == 0 {
		return probs
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range logits {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if lo == hi {
		for i := range probs {
			probs[i] = 1 / float64(len(probs))
		}
		return probs
	}
	span := hi - lo
	maxScaled := math.Inf(-1)
	for i, v := range logits {
		probs[i] = -(v / span) / temperature
		maxScaled = math.Max(maxScaled, probs[i])
	}
	var sum float64
	for i := range probs {
		probs[i] = math.Exp(probs[i] - maxScaled)
		sum += probs[i]
	}
	for i := range probs {
		probs[i] /= sum
	}
	return probs
}

// softmaxSample returns the index Dynamo's softmax_sample returns for the
// draw sample: the first whose cumulative probability reaches it
// (sample <= cumsum), and the last when rounding leaves the sum short.
func softmaxSample(logits []float64, temperature, sample float64) int {
	var cum float64
	for i, p := range softmaxProbs(logits, temperature) {
		cum += p
		if sample <= cum {
			return i
		}
	}
	return len(logits) - 1
}
