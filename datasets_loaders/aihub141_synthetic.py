"""Deterministic synthetic conversations in exactly the AI Hub 141 schema.

The real data may not be redistributed, so the embedded default run and the
tests use these: personas drawn from a fixed bank of first-person Korean
facts, each revealed in a paraphrased utterance (so matching is not trivial),
spread over 2-4 sessions with filler turns, and the per-session
``sessionPersonaSummary`` / ``prevAggregatedpersonaSummary`` bookkeeping the
protocol scores against. Same seed, same files, byte for byte.
"""
from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

from .aihub141 import Conversation, parse_conversation

# (summary as the data set writes it, utterances that reveal it)
FACT_BANK: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("나는 30대 남성이다.", ("저는 올해 서른둘 된 남자예요.", "삼십대 남자라서 요즘 체력이 예전 같지 않네요.")),
    ("나는 20대 여성이다.", ("저는 스물다섯 살 여자예요.", "이십대 중반 여자라 취업 걱정이 많아요.")),
    ("나는 회사원이다.", ("저는 평범한 회사원이에요. 매일 아홉 시에 출근해요.", "회사 다니면서 야근이 잦아요.")),
    ("나는 초등학교 교사이다.", ("저는 초등학교에서 아이들을 가르치고 있어요.", "교사로 일한 지 벌써 오 년이 됐어요.")),
    ("나는 간호사로 일한다.", ("병원에서 간호사로 근무하고 있어요.", "간호사라서 교대 근무를 해요.")),
    ("나는 대학생이다.", ("저는 대학교 삼 학년이에요.", "대학에서 경영학을 공부하고 있어요.")),
    ("나는 고양이를 키운다.", ("집에 고양이 한 마리를 키우고 있어요.", "우리 고양이가 아침마다 저를 깨워요.")),
    ("나는 강아지를 키운다.", ("저는 강아지를 키워서 매일 산책을 나가요.", "우리 강아지가 벌써 세 살이에요.")),
    ("나는 등산을 좋아한다.", ("주말마다 등산을 다녀요. 산에 오르면 기분이 좋아요.", "등산이 제일 좋아하는 취미예요.")),
    ("나는 요리를 좋아한다.", ("요리하는 걸 정말 좋아해서 주말엔 새로운 음식을 만들어요.", "퇴근하면 요리하면서 스트레스를 풀어요.")),
    ("나는 커피를 좋아한다.", ("하루에 커피를 세 잔은 마셔요.", "커피 없이는 아침을 시작할 수가 없어요.")),
    ("나는 매운 음식을 못 먹는다.", ("저는 매운 음식을 잘 못 먹어요.", "매운 걸 먹으면 배가 아파서 피해요.")),
    ("나는 서울에 산다.", ("저는 서울에서 살고 있어요.", "서울 마포구에 자취방이 있어요.")),
    ("나는 부산에 산다.", ("저는 부산에 살아요. 바다가 가까워서 좋아요.", "부산 해운대 근처에서 지내요.")),
    ("나는 결혼했다.", ("작년에 결혼해서 신혼이에요.", "아내랑 같이 산 지 일 년 됐어요.")),
    ("나는 아이가 두 명 있다.", ("저는 아이가 둘이에요. 첫째는 초등학생이에요.", "두 아이 키우느라 정신이 없어요.")),
    ("나는 운동을 꾸준히 한다.", ("헬스장에 일주일에 네 번 가요.", "매일 아침 조깅을 해요.")),
    ("나는 책 읽는 것을 좋아한다.", ("한 달에 책을 다섯 권은 읽어요.", "소설 읽는 걸 정말 좋아해요.")),
    ("나는 영화를 자주 본다.", ("주말마다 극장에 가서 영화를 봐요.", "영화 보는 게 제 가장 큰 낙이에요.")),
    ("나는 피아노를 칠 줄 안다.", ("어릴 때부터 피아노를 배워서 지금도 쳐요.", "피아노 연주가 취미예요.")),
    ("나는 여행을 좋아한다.", ("여행 다니는 걸 좋아해서 휴가 때마다 떠나요.", "올해는 일본 여행을 두 번 다녀왔어요.")),
    ("나는 채식주의자이다.", ("저는 고기를 안 먹는 채식주의자예요.", "채식을 시작한 지 삼 년 됐어요.")),
    ("나는 자취를 한다.", ("혼자 자취하고 있어요.", "자취 생활이 벌써 사 년째예요.")),
    ("나는 게임을 좋아한다.", ("퇴근하고 게임하는 게 낙이에요.", "주말엔 친구들이랑 온라인 게임을 해요.")),
    ("나는 불면증이 있다.", ("요즘 잠을 잘 못 자서 힘들어요.", "불면증 때문에 병원에 다니고 있어요.")),
    ("나는 다이어트 중이다.", ("요즘 다이어트하느라 저녁을 굶어요.", "살을 빼려고 식단 조절을 하고 있어요.")),
    ("나는 영어 공부를 하고 있다.", ("매일 아침 영어 회화 학원에 다녀요.", "토익 점수 올리려고 영어 공부 중이에요.")),
    ("나는 자동차가 없다.", ("저는 차가 없어서 지하철로 다녀요.", "운전면허는 있는데 차는 없어요.")),
    ("나는 축구를 좋아한다.", ("주말마다 조기 축구회에서 공을 차요.", "축구 경기는 꼭 챙겨 봐요.")),
    ("나는 그림 그리기를 좋아한다.", ("시간 날 때마다 그림을 그려요.", "수채화 그리는 게 취미예요.")),
    ("나는 부모님과 함께 산다.", ("아직 부모님이랑 같이 살아요.", "본가에서 부모님과 지내고 있어요.")),
    ("나는 개발자로 일한다.", ("회사에서 백엔드 개발을 하고 있어요.", "프로그래머라서 하루 종일 코드를 짜요.")),
)
OTHER_FACTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("나는 40대 여성이다.", ("저는 마흔 넘은 아줌마예요.",)),
    ("나는 제주도에 산다.", ("저는 제주도에 살아요.",)),
    ("나는 식물을 키운다.", ("베란다에서 화분을 여러 개 키워요.",)),
    ("나는 수영을 배운다.", ("요즘 수영을 배우고 있어요.",)),
    ("나는 빵을 좋아한다.", ("빵집 다니는 게 취미예요.",)),
    ("나는 프리랜서이다.", ("저는 프리랜서로 번역 일을 해요.",)),
)
FILLER_USER = ("그렇군요.", "아 정말요?", "네 맞아요.", "하하 재밌네요.", "오늘 날씨가 좋네요.", "그럼 다음에 또 얘기해요.",
               "안녕하세요!", "좋은 하루 보내세요.", "요즘 어떻게 지내세요?", "그건 처음 들어봐요.")
FILLER_OTHER = ("그렇군요. 멋지네요!", "와 대단하시네요.", "저도 그런 적 있어요.", "안녕하세요! 반가워요.", "정말요? 더 얘기해 주세요.",
                "그럼 다음에 또 봬요.", "좋은 하루 보내세요.", "요즘 날씨가 많이 쌀쌀해졌어요.", "맞아요, 저도 그렇게 생각해요.")


def _dialog_turn(speaker: str, utterance: str, summary: str, ts: datetime) -> dict[str, str]:
    return {"speaker": speaker, "personaID": f"P-{speaker}", "participantID": speaker, "utterance": utterance,
            "summary": summary, "date": ts.strftime("%Y-%m-%d"), "time": ts.strftime("%H:%M:%S"), "terminate": "false"}


def generate_conversation(index: int, level: int, seed: int) -> dict[str, Any]:
    """One conversation file (a dict in the AIHub-141 schema)."""
    if not 2 <= level <= 4:
        raise ValueError("level (sessions per conversation) must be 2, 3 or 4")
    rng = random.Random(f"{seed}:{level}:{index}")
    user_facts = rng.sample(FACT_BANK, k=min(len(FACT_BANK), 3 * level))
    other_facts = rng.sample(OTHER_FACTS, k=min(len(OTHER_FACTS), level))
    ms_id = f"S{level}-{seed:02d}-{index:05d}"
    start = datetime(2023, 3, 1, 19, 0) + timedelta(days=rng.randrange(300))
    sessions, aggregated_user, aggregated_other = [], [], []
    ts = start
    for s in range(level):
        gap_days = 0 if s == 0 else rng.randint(1, 14)
        ts = ts + timedelta(days=gap_days, hours=rng.randint(0, 3))
        new_user = user_facts[3 * s: 3 * s + 3]
        new_other = [other_facts[s]]
        slots: list[tuple[str, str, str]] = []
        for summary, utts in new_user:
            slots.append(("speaker1", rng.choice(utts), summary))
        for summary, utts in new_other:
            slots.append(("speaker2", rng.choice(utts), summary))
        for _ in range(rng.randint(3, 5)):
            slots.append(("speaker1", rng.choice(FILLER_USER), ""))
            slots.append(("speaker2", rng.choice(FILLER_OTHER), ""))
        rng.shuffle(slots)
        dialog = []
        for speaker, utt, summary in slots:
            ts = ts + timedelta(seconds=rng.randint(20, 90))
            dialog.append(_dialog_turn(speaker, utt, summary, ts))
        sessions.append({
            "sessionID": f"{level}-{index:05d}-{s + 1}",
            "prevSessionID": f"{level}-{index:05d}-{s}" if s else None,
            "nthSession": str(s + 1),
            "numberOfUtterances": str(len(dialog)),
            "numberOfTurns": str(len(dialog) // 2),
            "prevTimeInfo": {"timeNum": str(gap_days) if s else "", "timeUnit": "일" if s else ""},
            "dialog": dialog,
            "sessionPersonaSummary": {"speaker1": [f for f, _ in new_user], "speaker2": [f for f, _ in new_other]},
            "prevAggregatedpersonaSummary": {"speaker1": list(aggregated_user), "speaker2": list(aggregated_other)},
        })
        aggregated_user += [f for f, _ in new_user]
        aggregated_other += [f for f, _ in new_other]
    return {
        "FileInfo": {"filename": f"K{level}-{index:05d}-SYN-S{level}.json", "sessionLevel": str(level)},
        "participantsInfo": {"speaker1": {"gender": "", "age": ""}, "speaker2": {"gender": "", "age": ""}},
        "multisessionInfo": {"multisessionID": ms_id},
        "personaInfo": {
            "clInfo": {"personaID": f"CL-{ms_id}", "personaFeatures": [f for f, _ in user_facts], "speakerType": "speaker1"},
            "cpInfo": {"personaID": f"CP-{ms_id}", "personaFeatures": [f for f, _ in other_facts], "speakerType": "speaker2"},
        },
        "topicInfo": {"topicID": "SYN", "topicType": "일상", "topicTitle": "synthetic"},
        "sessionInfo": sessions,
    }


def synthetic_conversations(n: int, level: int = 4, seed: int = 0) -> Iterator[Conversation]:
    for i in range(n):
        conv = parse_conversation(generate_conversation(i, level, seed), f"synthetic:{seed}:{level}:{i}")
        assert conv is not None
        yield conv


def write_synthetic(folder: str | Path, n: int, level: int = 4, seed: int = 0) -> list[Path]:
    """Write files named like the real ones, e.g. for testing the folder loader."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        doc = generate_conversation(i, level, seed)
        p = folder / doc["FileInfo"]["filename"]
        p.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
        paths.append(p)
    return paths
