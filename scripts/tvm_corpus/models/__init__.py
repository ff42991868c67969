"""The model definitions.

Each model module exposes ``programs(...) -> [ProgramSpec]`` (configuration
"full" first, then "small"); :func:`registry` names them with a title, a short
description for the program header and README, and the checksum tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass
class ModelInfo:
    name: str
    title: str
    description: list[str]
    rtol: float  # |checksum - reference| <= rtol * magnitude
    programs: Callable[[], list]


def registry() -> dict[str, ModelInfo]:
    from . import bert, deepspeech2, lstm, nasnet, resnext, seq2seq

    models = [
        ModelInfo("bert_fp32", "BERT-base encoder layer, float32",
                  ["One BERT-base encoder layer (post-LayerNorm): Q/K/V projections, 12-head",
                   "attention, output projection, residual + LayerNorm, FFN with erf GELU,",
                   "residual + LayerNorm. Batch 1."],
                  1e-3, lambda: bert.programs("float32")),
        ModelInfo("bert_fp16", "BERT-base encoder layer, float16",
                  ["The BERT-base layer of bert_fp32 with every tensor in float16 (TVM's",
                   "kernels accumulate in float16 as the Relax graph asks)."],
                  1e-2, lambda: bert.programs("float16")),
        ModelInfo("lstm", "Stacked LSTM (Rammer configuration), float32",
                  ["Stacked LSTM: batch 1, input = hidden, gates i, f, g, o. TVM compiles one",
                   "time step of all layers; the program runs it in a host loop over the steps,",
                   "with input and state pointers offset by the step (Hs[t] -> Hs[t+1])."],
                  1e-3, lstm.programs),
        ModelInfo("resnext", "ResNeXt blocks (ResNeXt-29 8x64d, stage 1), float32",
                  ["ResNeXt bottleneck blocks: 1x1 conv, grouped 3x3 conv (cardinality 8, width",
                   "64), 1x1 conv, projection or identity shortcut, ReLU; batch norm folded into",
                   "the convolution biases. Input is the stem's output, batch 1."],
                  1e-3, resnext.programs),
        ModelInfo("nasnet", "NASNet-A normal cell (CIFAR, NASNet-A 6@768 stage 1), float32",
                  ["One NASNet-A normal cell: 1x1 input adjustments, five blocks of separable",
                   "3x3/5x5 convolutions (relu, depthwise, pointwise, twice), 3x3 average",
                   "pooling and identities, concatenated. Batch norm folded; batch 1."],
                  1e-3, nasnet.programs),
        ModelInfo("seq2seq", "Seq2Seq decoder steps (2-layer LSTM + Luong attention), float32",
                  ["Seq2Seq decoder with teacher forcing: a prologue computes the attention keys",
                   "from the encoder outputs once; each step runs a 2-layer LSTM, general",
                   "(Luong) attention over the encoder outputs, a tanh combination layer and",
                   "the vocabulary projection, in a host loop over the steps."],
                  1e-3, seq2seq.programs),
        ModelInfo("deepspeech2", "DeepSpeech2 (2 conv + 3 GRU layers, reduced), float32",
                  ["DeepSpeech2-style acoustic model: two strided 2-D convolutions with clipped",
                   "ReLU over a spectrogram, the first GRU layer's input projection for all",
                   "frames, then unidirectional GRU layers and the character projection in a",
                   "host loop over the frames."],
                  1e-3, deepspeech2.programs),
    ]
    return {m.name: m for m in models}
