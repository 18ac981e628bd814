"""Profile requests: "everything you know about the user" is not a similarity search.

A query whose every content morpheme is a word of asking-about-the-person
("알다", "대하다", "사실", "정보", "know", "everything", "fact" ...) names no
topic, so cosine against it ranks by accident (AIHub-141's fixed query
"사용자에 대해 알고 있는 모든 사실" shares no content word with any
memory). Such a request is served from what is currently believed: active
facts ranked by class, importance and strength, then the user's own turns
that no returned fact covers.
"""
from __future__ import annotations

from typing import Sequence

# content morphemes / English stems the tokenizer yields for asking about a person
PROFILE_WORDS = frozenset(
    "대하 관하 사실 정보 전부 모두 기억 프로필 알 알려주 말하 보이 목록 정리 요약 "
    "know tell everyth fact profil rememb inform list summar summari describ user".split()
)

# a stable identity outranks a passing observation when listing what is known
CLASS_WEIGHT = {"permanent": 1.0, "identity": 1.0, "preference": 0.9, "reflection": 0.8, "observation": 0.7,
                "episode": 0.5, "task_state": 0.4}


def is_profile_request(tokens: Sequence[str]) -> bool:
    return bool(tokens) and all(t in PROFILE_WORDS for t in tokens)


def profile_score(memory_class: str, importance: float, strength: float, *, is_fact: bool) -> float:
    """In [0, 1]: class weight x (0.5 + 0.5 importance) x strength; turns count half a fact."""
    base = CLASS_WEIGHT.get(memory_class, 0.5) * (0.5 + 0.5 * max(0.0, min(1.0, importance))) * max(0.0, min(1.0, strength))
    return base if is_fact else 0.5 * base
