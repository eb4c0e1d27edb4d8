"""The shipped translation models (assets/checkpoints/en-zh.pt, zh-en.pt) translate fresh sentences of the grammar."""
import random

import pytest

from model.bleu import TOKENIZE_FOR, corpus_bleu
from model.checkpoint import load_checkpoint, pretrained_path
from model.tasks import batch_from_pairs, exact_match, get_task
from model.training import greedy_batch
from model.transformer import ForwardOptions

FRESH_SEED = 20261124  # neither the training seed (0) nor its held-out set's (1_000_003)
SAMPLES = 1000
CHUNK = 250  # sentences decoded together


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/unit/conftest.py


def translate(ckpt, task, sources: list[str]) -> list[str]:
    """Greedy translations of ``sources``, a chunk of sentences per decoder pass."""
    out: list[str] = []
    for i in range(0, len(sources), CHUNK):
        batch = batch_from_pairs([(s, "") for s in sources[i:i + CHUNK]], ckpt.tokenizer, ckpt.target_tokenizer)
        ids = greedy_batch(ckpt.model, batch.src, task.max_tgt_len + 1, ForwardOptions(need_weights=False))
        out += [ckpt.target_tokenizer.decode(row) for row in ids.tolist()]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["en-zh", "zh-en"])
def test_shipped_translation_model_on_fresh_sentences(task_name):
    path = pretrained_path(task_name)
    assert path.exists(), f"{path} is missing: train it with the command in the README"
    assert path.stat().st_size <= 8 * 2**20
    ckpt = load_checkpoint(path, map_location="cpu")
    task = get_task(task_name)
    assert ckpt.task["name"] == task_name
    assert ckpt.tokenizer == task.source_tokenizer() and ckpt.target_tokenizer == task.target_tokenizer()
    pairs = task.sample_pairs(random.Random(FRESH_SEED), SAMPLES)
    predictions = translate(ckpt, task, [s for s, _ in pairs])
    references = [t for _, t in pairs]
    accuracy = exact_match(predictions, references)
    bleu = corpus_bleu(predictions, references, tokenize=TOKENIZE_FOR[task_name.split("-")[1]])
    assert accuracy >= 0.95, f"{task_name}: {accuracy:.3f} exact match on {SAMPLES} fresh sentences"
    assert bleu >= 90, f"{task_name}: BLEU {bleu:.1f} on {SAMPLES} fresh sentences"


def test_shipped_en_zh_resolves_it():
    ckpt = load_checkpoint(pretrained_path("en-zh"), map_location="cpu")
    sources = ["the cat did not cross the road because it was too tired .",
               "the cat did not cross the road because it was too wide ."]
    assert translate(ckpt, get_task("en-zh"), sources) == ["猫没有过马路，因为猫太累了。", "猫没有过马路，因为马路太宽了。"]
