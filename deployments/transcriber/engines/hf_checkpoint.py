"""Convert a CTranslate2 Whisper checkpoint (model.bin + config.json + tokenizer.json) into a Hugging Face
checkpoint directory that `WhisperForConditionalGeneration.from_pretrained` loads: safetensors, config,
generation config, tokenizer and feature extractor.

Why: the only Whisper weights that install offline here ship in CTranslate2 format, and the transformers
engine needs them in Hugging Face format. The conversion is exact (float16 weights are copied, fused
projections split), so both engines run the same model.
"""

import json
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import (  # type: ignore[attr-defined]  # WhisperTokenizerFast: a lazy alias in transformers 5
    GenerationConfig,
    WhisperConfig,
    WhisperFeatureExtractor,
    WhisperTokenizerFast,
)

CT2_DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
"""CTranslate2's DataType enum order, as written in model.bin."""


def read_ct2_model(path: Path) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 `model.bin` (format version 6), aliases resolved."""
    variables: dict[str, np.ndarray] = {}
    with path.open("rb") as model:

        def number(fmt: str) -> int:
            value: int = struct.unpack(fmt, model.read(struct.calcsize(fmt)))[0]
            return value

        def string() -> str:
            return model.read(number("H"))[:-1].decode()

        version = number("I")
        if version < 5:
            raise ValueError(f"unsupported CTranslate2 model.bin version {version}")
        string(), number("I")  # spec name and revision
        for _ in range(number("I")):
            name = string()
            shape = [number("I") for _ in range(number("B"))]
            dtype = CT2_DTYPES[number("B")]
            data = model.read(number("I"))
            storage = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
            variables[name] = np.frombuffer(data, dtype=storage).reshape(shape)
        for _ in range(number("I")):
            alias, target = string(), string()
            variables[alias] = variables[target]
    if any(name.endswith("weight_scale") for name in variables):
        raise ValueError("int8-quantized CTranslate2 checkpoints are not supported: convert a float16 one")
    return variables


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(array, dtype=np.float32))


def _hf_state_dict(ct2: dict[str, np.ndarray], encoder_layers: int, decoder_layers: int) -> dict[str, torch.Tensor]:
    """Rename CTranslate2's variables to Hugging Face's and split its fused attention projections."""
    state: dict[str, torch.Tensor] = {}

    def copy(hf: str, name: str) -> None:
        state[f"{hf}.weight"] = _tensor(ct2[f"{name}/weight" if f"{name}/weight" in ct2 else f"{name}/gamma"])
        bias = f"{name}/bias" if f"{name}/bias" in ct2 else f"{name}/beta"
        if bias in ct2:
            state[f"{hf}.bias"] = _tensor(ct2[bias])

    def split(prefix: str, name: str, targets: list[str]) -> None:
        """A fused projection (q|k|v or k|v): equal row blocks; Whisper's k projection has no bias."""
        weights = np.split(ct2[f"{name}/weight"], len(targets))
        biases = np.split(ct2[f"{name}/bias"], len(targets))
        for target, weight, bias in zip(targets, weights, biases, strict=True):
            state[f"{prefix}.{target}.weight"] = _tensor(weight)
            if target != "k_proj":
                state[f"{prefix}.{target}.bias"] = _tensor(bias)

    for side, layers in (("encoder", encoder_layers), ("decoder", decoder_layers)):
        hf_side = f"model.{side}"
        state[f"{hf_side}.embed_positions.weight"] = _tensor(ct2[f"{side}/position_encodings/encodings"])
        copy(f"{hf_side}.layer_norm", f"{side}/layer_norm")
        for i in range(layers):
            ct2_layer, hf_layer = f"{side}/layer_{i}", f"{hf_side}.layers.{i}"
            copy(f"{hf_layer}.self_attn_layer_norm", f"{ct2_layer}/self_attention/layer_norm")
            split(f"{hf_layer}.self_attn", f"{ct2_layer}/self_attention/linear_0", ["q_proj", "k_proj", "v_proj"])
            copy(f"{hf_layer}.self_attn.out_proj", f"{ct2_layer}/self_attention/linear_1")
            if side == "decoder":
                copy(f"{hf_layer}.encoder_attn_layer_norm", f"{ct2_layer}/attention/layer_norm")
                copy(f"{hf_layer}.encoder_attn.q_proj", f"{ct2_layer}/attention/linear_0")
                split(f"{hf_layer}.encoder_attn", f"{ct2_layer}/attention/linear_1", ["k_proj", "v_proj"])
                copy(f"{hf_layer}.encoder_attn.out_proj", f"{ct2_layer}/attention/linear_2")
            copy(f"{hf_layer}.final_layer_norm", f"{ct2_layer}/ffn/layer_norm")
            copy(f"{hf_layer}.fc1", f"{ct2_layer}/ffn/linear_0")
            copy(f"{hf_layer}.fc2", f"{ct2_layer}/ffn/linear_1")
    copy("model.encoder.conv1", "encoder/conv1")
    copy("model.encoder.conv2", "encoder/conv2")
    state["model.decoder.embed_tokens.weight"] = _tensor(ct2["decoder/embeddings/weight"])
    return state


def _layer_count(ct2: dict[str, np.ndarray], side: str) -> int:
    return len({name.split("/")[1] for name in ct2 if re.match(rf"{side}/layer_\d+/", name)})


def convert_ct2_to_hf(ct2_dir: Path, out_dir: Path) -> Path:
    """Write the Hugging Face checkpoint of the CTranslate2 Whisper model in `ct2_dir` to `out_dir`."""
    ct2 = read_ct2_model(ct2_dir / "model.bin")
    ct2_config = json.loads((ct2_dir / "config.json").read_text())
    tokenizer = WhisperTokenizerFast(tokenizer_file=str(ct2_dir / "tokenizer.json"))
    token = tokenizer.convert_tokens_to_ids
    vocab_size, d_model = ct2["decoder/embeddings/weight"].shape
    encoder_layers, decoder_layers = _layer_count(ct2, "encoder"), _layer_count(ct2, "decoder")
    multilingual = len(ct2_config["lang_ids"]) > 1 and vocab_size >= 51865
    eot = token("<|endoftext|>")
    config = WhisperConfig(
        vocab_size=vocab_size,
        num_mel_bins=ct2["encoder/conv1/weight"].shape[1],
        d_model=d_model,
        encoder_layers=encoder_layers,
        decoder_layers=decoder_layers,
        encoder_attention_heads=int(ct2["encoder/num_heads"]),
        decoder_attention_heads=int(ct2["decoder/num_heads"]),
        encoder_ffn_dim=ct2["encoder/layer_0/ffn/linear_0/weight"].shape[0],
        decoder_ffn_dim=ct2["decoder/layer_0/ffn/linear_0/weight"].shape[0],
        max_source_positions=ct2["encoder/position_encodings/encodings"].shape[0],
        max_target_positions=ct2["decoder/position_encodings/encodings"].shape[0],
        decoder_start_token_id=token("<|startoftranscript|>"),
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        begin_suppress_tokens=ct2_config["suppress_ids_begin"],
        suppress_tokens=ct2_config["suppress_ids"],
        tie_word_embeddings=True,
    )
    generation: Any = GenerationConfig(  # type: ignore[no-untyped-call]  # Any: Whisper's lang_to_id and task_to_id are undeclared extras
        decoder_start_token_id=config.decoder_start_token_id,
        bos_token_id=eot,
        eos_token_id=eot,
        pad_token_id=eot,
        max_length=config.max_target_positions,
        begin_suppress_tokens=ct2_config["suppress_ids_begin"],
        suppress_tokens=ct2_config["suppress_ids"],
        alignment_heads=ct2_config["alignment_heads"],
        no_timestamps_token_id=token("<|notimestamps|>"),
        prev_sot_token_id=token("<|startofprev|>"),
        max_initial_timestamp_index=50,
        is_multilingual=multilingual,
    )
    if multilingual:
        generation.lang_to_id = {tokenizer.convert_ids_to_tokens(i): i for i in ct2_config["lang_ids"]}
        generation.task_to_id = {"transcribe": token("<|transcribe|>"), "translate": token("<|translate|>")}
    out_dir.mkdir(parents=True, exist_ok=True)
    state = _hf_state_dict(ct2, encoder_layers, decoder_layers)
    save_file({name: tensor.contiguous() for name, tensor in state.items()}, out_dir / "model.safetensors")
    config.save_pretrained(out_dir)
    generation.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    extractor = WhisperFeatureExtractor(feature_size=config.num_mel_bins)  # type: ignore[no-untyped-call]
    extractor.save_pretrained(out_dir)
    return out_dir
