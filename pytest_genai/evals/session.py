"""State shared by one benchmark session: fp32 models, selected data and fp32 results, each computed once.

The benchmarks' session fixture holds one :class:`EvalSession`. Everything is keyed by (device, model[, task]),
so the fp32 baseline of a run is evaluated once and every quantized row compares with the same numbers on the same
examples.

Data comes from the first origin that serves the session's budget (``data.resolve_origin``: data dir, Hugging Face
cache, embedded slice). A task no origin serves skips its test, with the command that fetches the data, before any
model is loaded for it.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from pytest_genai.evals import data, models, runner
from pytest_genai.evals.config import EvalBudget, EvalSettings
from pytest_genai.evals.lm import EvalLM, encode_text
from pytest_genai.evals.runner import TaskData, TaskResult


@dataclasses.dataclass
class Fp32Model:
    loaded: models.LoadedModel
    load_seconds: float


class EvalSession:
    def __init__(self, budget: EvalBudget, settings: EvalSettings, data_dir: Any, *, trust_remote_code: bool = False):
        self.trust_remote_code = trust_remote_code
        self.budget = budget
        self.settings = settings
        self.data_dir = data_dir
        self._models: dict[tuple[str, str], Fp32Model] = {}
        self._data: dict[tuple[str, str], TaskData] = {}
        self._baselines: dict[tuple[str, str, str], TaskResult] = {}
        self._throughput_ids: dict[str, Any] = {}

    # -- models ----------------------------------------------------------------------------------------------------
    def fp32_model(self, device: Any, ref: models.ModelRef) -> Fp32Model:
        """The fp32 model on ``device``, loaded once (other devices' copies are dropped to bound memory)."""
        key = (device.id, ref.name)
        if key not in self._models:
            for other in [k for k in self._models if k[0] != device.id]:
                del self._models[other]
            start = time.perf_counter()
            loaded = models.load_model(ref, device.torch_device, trust_remote_code=self.trust_remote_code)
            self._models[key] = Fp32Model(loaded, time.perf_counter() - start)
        return self._models[key]

    def fresh_model(self, device: Any, ref: models.ModelRef) -> Any:
        """A new fp32 copy of the model (to quantize in place), loaded from the same local folder."""
        return models.load_model(models.ModelRef(ref.name, "folder", self.fp32_model(device, ref).loaded.folder),
                                 device.torch_device, trust_remote_code=self.trust_remote_code).model

    def eval_lm(self, model: Any, tokenizer: Any, device: Any) -> EvalLM:
        return EvalLM(model, tokenizer, max_length=self.settings.max_length, batch_size=self.settings.batch_size,
                      device=device.torch_device)

    # -- data ------------------------------------------------------------------------------------------------------
    def require_data(self, task: str) -> data.Origin:
        """Where ``task``'s data comes from at this session's budget; skips the calling test (naming the command
        that fetches the data) when no origin serves it."""
        try:
            return data.resolve_origin(task, self.data_dir, self.budget)
        except data.DataUnavailable as exc:
            pytest.skip(str(exc))

    def task_data(self, task: str, ref: models.ModelRef, tokenizer: Any) -> TaskData:
        key = (task, ref.name)
        if key not in self._data:
            self.require_data(task)
            try:
                self._data[key] = runner.select(task, self.budget, self.data_dir,
                                                lambda text: len(encode_text(tokenizer, text)))
            except data.DataUnavailable as exc:  # a slice that lacks a page this tokenizer's selection needs
                pytest.skip(str(exc))
        return self._data[key]

    def data_identity(self, task: str, ref: models.ModelRef, tokenizer: Any) -> dict[str, str]:
        """``data_origin``, ``dataset``, ``split`` and the sha256 of the examples this session evaluates for
        ``task`` (no local path: for configs and reports)."""
        return data.data_identity(task, self.data_dir, self.task_data(task, ref, tokenizer).examples)

    def throughput_ids(self, ref: models.ModelRef, tokenizer: Any, batch: int, seq_len: int) -> Any:
        """A fixed ``[batch, seq_len]`` batch of WikiText tokens (from the start of the corpus) for forward timing."""
        from pytest_genai.evals import throughput

        key = f"{ref.name}:{batch}x{seq_len}"
        if key not in self._throughput_ids:
            corpus = data.load_wikitext(self.data_dir)
            text, tokens = "", []
            for page in corpus.pages:
                text += page.text
                tokens = encode_text(tokenizer, text)
                if len(tokens) >= batch * seq_len:
                    break
            self._throughput_ids[key] = throughput.token_batch(tokens, batch, seq_len)
        return self._throughput_ids[key]

    # -- the fp32 baseline --------------------------------------------------------------------------------------------
    def baseline(self, device: Any, ref: models.ModelRef, task: str) -> TaskResult:
        """The fp32 result of ``task``: evaluated on first request, then reused by every row of the session."""
        key = (device.id, ref.name, task)
        if key not in self._baselines:
            self.require_data(task)  # before the model loads
            fp32 = self.fp32_model(device, ref)
            lm = self.eval_lm(fp32.loaded.model, fp32.loaded.tokenizer, device)
            self._baselines[key] = runner.run_task(lm, self.task_data(task, ref, fp32.loaded.tokenizer), self.settings,
                                                   sync=device.synchronize)
        return self._baselines[key]

    def has_baseline(self, device: Any, ref: models.ModelRef, task: str) -> bool:
        return (device.id, ref.name, task) in self._baselines
