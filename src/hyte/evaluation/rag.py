"""RAG evaluation without an LLM judge: retrievers side by side, one local generator, held-out HPO questions.

Questions are "What is TERM?" for terms of the held-out HPO branches (``heldout_retrieval_set``: the first EXACT
synonym, else the name); the gold passage is the term's definition, in a corpus of held-out definitions. Each
retriever ranks the corpus with its own similarity (exact search), its top k passages go into the prompt
(``hyte.rag.build_messages``), the generator answers greedily and ``hyte.rag.cite`` attaches citations. Per retriever:

* ``context_recall@k``: share of questions whose gold passage is in the prompt;
* ``support``: mean share of the answer's content words (not in the question) found in the prompt's passages
  (``hyte.rag.support``);
* ``supported_answers``: share of answers with support >= 0.5;
* ``cites_gold``: share of answers citing the gold passage;
* ``supported_sentences``: mean over answers of the share of their sentences that a retrieved passage supports
  (``hyte.rag.Answer.supported_share``);
* ``extractive_supported_sentences``, ``extractive_cites_gold``: the same for the extractive answer of the same
  passages (``hyte.rag.extract``, no generator), the other mode of ``hyte rag``.

``support`` is lexical (see ``hyte.rag``): it tells how much of an answer comes from its context, not whether the
answer is right. A generator that ignores the context scores low whatever the retriever; one that copies its
context scores high even from the wrong passages, so read it beside context recall.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["evaluate_rag", "hpo_rag_questions"]


def hpo_rag_questions(questions: int = 50, documents: int = 1000, seed: int = 0, test_fraction: float = 0.2,
                      split_seed: int = 0) -> tuple[dict[str, str], dict[str, str]]:
    """``({term id: question}, {term id: definition})``: questions about held-out HPO terms and the held-out
    corpus holding their definitions (the gold passage of question q is corpus[q])."""
    from .heldout import heldout_retrieval_set

    queries, corpus, _ = heldout_retrieval_set(questions, documents, seed=seed, test_fraction=test_fraction,
                                               split_seed=split_seed)
    return {term_id: f"What is {name}?" for term_id, name in queries.items()}, corpus


def _mean(values) -> float | None:
    """Mean of the values that are not None (answers whose sentences all state nothing have no share)."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def evaluate_rag(retrievers: Mapping[str, object], generator, questions: Mapping[str, str],
                 corpus: Mapping[str, str], k: int = 4, max_new_tokens: int = 64, batch_size: int = 32,
                 show_progress_bar: bool | None = None) -> dict[str, dict]:
    """{retriever name: {"metrics": ..., "answers": [...]}} for encoders (HyTE or Euclidean) as retrievers."""
    from tqdm.auto import tqdm

    from ..rag import Passage, answer_question
    from .retrieval import rank_documents

    results = {}
    for name, encoder in retrievers.items():
        rankings = rank_documents(encoder, questions, corpus, top_k=k, batch_size=batch_size)
        answers = []
        for question_id in tqdm(questions, desc=f"answer with {name}", disable=show_progress_bar is False):
            # Only ids and texts reach the prompt; the rank stands in for index ids and scores.
            passages = [Passage(index_id=rank, id=doc_id, text=corpus[doc_id], score=float("nan"),
                                distance=float("nan"), radius=float("nan"))
                        for rank, doc_id in enumerate(rankings[question_id])]
            answer = answer_question(questions[question_id], passages, generator, max_new_tokens=max_new_tokens)
            extracted = answer_question(questions[question_id], passages, mode="extract")
            answers.append({"id": question_id, "question": questions[question_id],
                            "retrieved": rankings[question_id], "answer": answer.text,
                            "support": answer.support, "cites_gold": question_id in answer.citations,
                            "supported_sentences": answer.supported_share,
                            "extractive_answer": extracted.text,
                            "extractive_supported_sentences": extracted.supported_share,
                            "extractive_cites_gold": question_id in extracted.citations})
        supports = [a["support"] for a in answers if a["support"] is not None]
        count = len(answers)
        metrics = {f"context_recall@{k}": sum(a["id"] in a["retrieved"] for a in answers) / count,
                   "support": _mean(supports),
                   "supported_answers": sum(s >= 0.5 for s in supports) / count,
                   "cites_gold": sum(a["cites_gold"] for a in answers) / count,
                   "supported_sentences": _mean(a["supported_sentences"] for a in answers),
                   "extractive_supported_sentences": _mean(a["extractive_supported_sentences"] for a in answers),
                   "extractive_cites_gold": sum(a["extractive_cites_gold"] for a in answers) / count,
                   "num_questions": count}
        results[name] = {"model": encoder.name, "kind": encoder.kind, "metrics": metrics, "answers": answers}
    return results
