"""Contrastive training beyond one process and one batch in memory: cross-process negatives and gradient caching.

* ``contrastive_loss_across_processes``: every process's queries and documents (positives and hard negatives)
  gathered, so the loss of N processes x batch b is the loss of one process with batch N b. Local-slot replacement:
  the gathered copies carry no gradient, this process's own slot is replaced by its tensors (which do), and every
  process computes the same global loss. Its gradient reaches each process's parameters through that process's
  embeddings only, so the loss is multiplied by N before backward: DDP's gradient average then sums the N
  contributions, which is the gradient of the global loss. (torch.distributed.nn's differentiable all_gather does
  the same with a reduce-scatter in backward, which the CPU gloo backend lacks.)
* ``GradientCache``: GradCache (Gao et al., 2021), as sentence-transformers' CachedMultipleNegativesRankingLoss does
  for Euclidean models: embed the batch in chunks without a graph, compute the loss and its gradient with respect
  to the embeddings, then re-embed each chunk with a graph (same random state, so dropout matches) and
  back-propagate the cached gradient. Memory grows with the chunk, not the batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import contextmanager, nullcontext

import torch
import torch.distributed as dist
from torch import Tensor

from .losses import contrastive_loss


def world_size() -> int:
    """Number of processes in the default group (1 without torch.distributed)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def _gather(tensor: Tensor) -> list[Tensor]:
    """All processes' copies of ``tensor`` (same shape everywhere), without gradient; rank order."""
    copies = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(copies, tensor.detach().contiguous())
    return copies


def _gather_rows(tensor: Tensor) -> tuple[Tensor, Tensor, int]:
    """Stack every process's (n_r, ...) rows, padded to the largest n_r by repeating a real row (padding must be a
    valid embedding: a zero vector is not a hyperboloid point). Returns (N * n_max, ...) with this process's slot
    holding ``tensor`` itself (with its gradient), a (N * n_max,) validity mask and this slot's first row."""
    counts = [int(count) for count in _gather(torch.tensor([tensor.shape[0]], device=tensor.device))]
    n_max = max(counts)
    padded = torch.cat([tensor, tensor[:1].expand(n_max - tensor.shape[0], *tensor.shape[1:])])
    slots = _gather(padded)
    rank = dist.get_rank()
    slots[rank] = padded
    valid = torch.cat([torch.arange(n_max, device=tensor.device) < count for count in counts])
    return torch.cat(slots), valid, rank * n_max


def contrastive_loss_across_processes(queries: Tensor, documents: Tensor, *, logit_scale: Tensor,
                                      exclude: Tensor | None, gather: bool, **options) -> tuple[Tensor, Tensor]:
    """``losses.contrastive_loss`` of this process's (b, D) queries and (m, D) documents (the first b the
    positives), or with ``gather`` (and several processes) of every process's batch together. Returns (the loss to
    back-propagate, the loss value to log): with gathering, the first is N x the global loss (the module docstring
    says why) and the logit scale's gradient is divided by N, since every process computes the same global loss.

    ``exclude`` (b, m) marks copies of a query's own positive among its process's documents (the collator's
    duplicate mask); copies in other processes' documents are not detected (texts are not gathered), so keep
    examples unique across processes, as a shuffled dataset of distinct pairs does.
    """
    n = world_size()
    if not gather or n == 1:
        loss = contrastive_loss(queries, documents, logit_scale=logit_scale, exclude=exclude, **options)
        return loss, loss
    all_queries, valid_queries, _ = _gather_rows(queries)
    all_documents, valid_documents, document_offset = _gather_rows(documents)
    local = torch.zeros(queries.shape[0], all_documents.shape[0], dtype=torch.bool, device=documents.device)
    if exclude is not None:
        local[:, document_offset : document_offset + documents.shape[0]] = exclude
    excluded, _, _ = _gather_rows(local)
    # Query q of process r (row r * b_max + q) has its positive at document row r * m_max + q.
    b_max, m_max = all_queries.shape[0] // n, all_documents.shape[0] // n
    rows = torch.arange(all_queries.shape[0], device=queries.device)[valid_queries]
    # The scale in value, 1 / N x its gradient: the loss factor N must not multiply it.
    shared_scale = logit_scale * (1.0 / n) + (logit_scale * (1 - 1.0 / n)).detach()
    loss = contrastive_loss(all_queries[valid_queries], all_documents,
                            exclude=(excluded | ~valid_documents[None, :])[valid_queries],
                            positive_rows=(rows // b_max) * m_max + rows % b_max, logit_scale=shared_scale, **options)
    return n * loss, loss


def average_across_processes(parameters: Sequence[torch.nn.Parameter]) -> None:
    """Average the gradients of parameters DDP does not synchronise (left out with _ddp_params_and_buffers_to_ignore
    because no forward pass uses them, e.g. the logit scale)."""
    n = world_size()
    for parameter in parameters:
        if n > 1 and parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad /= n


class RandomState:
    """The CPU (and CUDA) random state at creation, to run a chunk again with the same dropout masks."""

    def __init__(self):
        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    @contextmanager
    def restored(self):
        """Run with this state; afterwards the random stream continues as if nothing had run (fork_rng)."""
        with torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if self.cuda is not None else []):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state_all(self.cuda)
            yield


class GradientCache:
    """GradCache over one contrastive batch: ``embed`` (input_ids, attention_mask) -> (n, D) embeddings.

    ``loss(queries, documents)`` gives the loss of embeddings computed in chunks of ``chunk_size`` rows without a
    graph; the tensor returned carries the loss's value, and back-propagating it (Trainer's backward, gradient
    accumulation's scaling included) runs the second pass: every chunk re-embedded with a graph, the cached gradient
    of the loss with respect to its embeddings pushed through it. ``parameters`` are those the loss uses directly
    (the logit scale): their gradients are cached too and applied with the same scaling.
    """

    def __init__(self, embed: Callable[[Tensor, Tensor], Tensor], chunk_size: int, no_sync=None):
        self.embed = embed
        self.chunk_size = chunk_size
        self.no_sync = no_sync  # DDP's model.no_sync: synchronise gradients once, after the last chunk

    def _embed_without_graph(self, input_ids: Tensor, attention_mask: Tensor) -> tuple[Tensor, list]:
        """(n, D) embeddings as a leaf that collects the loss's gradient, and the chunks with the random state
        each one started from (captured just before it runs, so chunks draw different dropout masks)."""
        chunks, outputs = [], []
        with torch.no_grad():
            for start in range(0, input_ids.shape[0], self.chunk_size):
                chunk = (input_ids[start : start + self.chunk_size], attention_mask[start : start + self.chunk_size],
                         RandomState(), start)
                outputs.append(self.embed(chunk[0], chunk[1]))
                chunks.append(chunk)
        return torch.cat(outputs).requires_grad_(), chunks

    def loss(self, query_inputs: tuple[Tensor, Tensor], document_inputs: tuple[Tensor, Tensor],
             compute_loss: Callable[[Tensor, Tensor], Tensor], parameters: Sequence[torch.nn.Parameter]) -> Tensor:
        queries, query_chunks = self._embed_without_graph(*query_inputs)
        documents, document_chunks = self._embed_without_graph(*document_inputs)
        value = compute_loss(queries, documents)
        trainable = [p for p in parameters if p.requires_grad]
        query_grad, document_grad, *parameter_grads = torch.autograd.grad(
            value, [queries, documents, *trainable], allow_unused=True)
        result = value.detach().requires_grad_()

        def second_pass(grad_output: Tensor) -> None:
            work = [*((chunk, query_grad) for chunk in query_chunks),
                    *((chunk, document_grad) for chunk in document_chunks)]
            for number, ((input_ids, attention_mask, state, start), grad) in enumerate(work):
                last = number == len(work) - 1
                # Autograd runs hooks with gradients off; the replay needs a graph.
                with self.no_sync() if self.no_sync is not None and not last else nullcontext(), torch.enable_grad():
                    with state.restored():
                        embedded = self.embed(input_ids, attention_mask)
                    surrogate = (embedded * grad[start : start + embedded.shape[0]]).sum() * grad_output
                    if last:  # the parameters the loss uses directly, once
                        surrogate = surrogate + sum((p * g).sum() * grad_output
                                                    for p, g in zip(trainable, parameter_grads) if g is not None)
                    surrogate.backward()

        result.register_hook(second_pass)
        return result
