"""Per-embedder threshold for the embedding matcher.

The reference's cosine >= 0.7 was set for a 3072-d Gemini embedder; for
multilingual-e5-small unrelated Korean sentences already score 0.84-0.96,
so 0.7 matches everything. The threshold here is the one that best separates
a small labelled set of paraphrase pairs from unrelated pairs (persona facts
against utterances that do / do not state them), and it is reported with
every score that uses it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from naia_memory.embedders.base import Embedder

PARAPHRASES = (
    ("나는 30대 남성이다.", "저는 올해 서른셋 된 남자예요."),
    ("나는 고양이를 키운다.", "집에서 고양이랑 같이 살고 있어요."),
    ("나는 등산을 좋아한다.", "주말이면 산에 오르는 게 제일 즐거워요."),
    ("나는 회사원이다.", "평일엔 회사에 출근해서 일해요."),
    ("나는 서울에 산다.", "서울 강남 쪽에 집이 있어요."),
    ("나는 커피를 좋아한다.", "아침마다 커피를 꼭 마셔요."),
    ("나는 채식주의자이다.", "고기는 전혀 먹지 않아요."),
    ("나는 대학생이다.", "대학교에 다니는 학생이에요."),
    ("나는 아이가 두 명 있다.", "우리 집 애들이 둘이에요."),
    ("나는 운동을 꾸준히 한다.", "매일 헬스장에 가서 운동해요."),
    ("나는 요리를 좋아한다.", "음식 만드는 게 제 취미예요."),
    ("나는 영화를 자주 본다.", "극장에 자주 가서 영화를 봐요."),
    ("나는 불면증이 있다.", "밤에 잠이 잘 안 와서 고생이에요."),
    ("나는 강아지를 키운다.", "우리 집 강아지랑 매일 산책해요."),
    ("나는 여행을 좋아한다.", "휴가 때마다 여행을 떠나요."),
    ("나는 간호사로 일한다.", "병원에서 환자들을 돌보는 간호사예요."),
    ("I have a dog.", "My dog and I go for a walk every morning."),
    ("I work as a teacher.", "I teach math at a high school."),
)
UNRELATED = (
    ("나는 30대 남성이다.", "주말엔 바다에 가는 걸 좋아해요."),
    ("나는 고양이를 키운다.", "요즘 회사 일이 너무 바빠요."),
    ("나는 등산을 좋아한다.", "저는 부산에서 태어났어요."),
    ("나는 회사원이다.", "강아지가 벌써 세 살이에요."),
    ("나는 서울에 산다.", "매운 음식을 잘 못 먹어요."),
    ("나는 커피를 좋아한다.", "피아노를 어릴 때부터 배웠어요."),
    ("나는 채식주의자이다.", "토익 시험을 다음 주에 봐요."),
    ("나는 대학생이다.", "결혼한 지 일 년 됐어요."),
    ("나는 아이가 두 명 있다.", "게임을 하면서 스트레스를 풀어요."),
    ("나는 운동을 꾸준히 한다.", "책을 한 달에 다섯 권 읽어요."),
    ("나는 요리를 좋아한다.", "차가 없어서 지하철을 타요."),
    ("나는 영화를 자주 본다.", "부모님과 함께 살고 있어요."),
    ("나는 불면증이 있다.", "축구 경기는 꼭 챙겨 봐요."),
    ("나는 강아지를 키운다.", "영어 회화 학원에 다녀요."),
    ("나는 여행을 좋아한다.", "병원에서 간호사로 일해요."),
    ("나는 간호사로 일한다.", "그림 그리는 게 취미예요."),
    ("I have a dog.", "I moved to Berlin last year."),
    ("I work as a teacher.", "My favourite food is pasta."),
)


@dataclass(frozen=True)
class Calibration:
    embedder: str
    threshold: float
    accuracy: float
    paraphrase_mean: float
    unrelated_mean: float


def pair_cosines(embedder: Embedder, pairs) -> np.ndarray:
    a = embedder.embed_passages([x for x, _ in pairs])
    b = embedder.embed_passages([y for _, y in pairs])
    return np.sum(a * b, axis=1)


def best_threshold(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """Midpoint of the adjacent pair of sorted scores that maximises accuracy."""
    scores = np.sort(np.concatenate([pos, neg]))
    cands = (scores[:-1] + scores[1:]) / 2 if len(scores) > 1 else scores
    best_t, best_acc = float(cands[0]), -1.0
    for t in cands:
        acc = (np.sum(pos >= t) + np.sum(neg < t)) / (len(pos) + len(neg))
        if acc > best_acc:
            best_t, best_acc = float(t), float(acc)
    return best_t, best_acc


def calibrate(embedder: Embedder) -> Calibration:
    pos, neg = pair_cosines(embedder, PARAPHRASES), pair_cosines(embedder, UNRELATED)
    t, acc = best_threshold(pos, neg)
    return Calibration(embedder.name, round(t, 4), round(acc, 4), round(float(pos.mean()), 4), round(float(neg.mean()), 4))
