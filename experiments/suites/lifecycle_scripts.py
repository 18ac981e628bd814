"""Scripted multi-session histories in which values change and are deleted.

Each step is said on a given day (with unrelated chatter around it); after
it, a probe asks for the value and names what is current, what is stale
(replaced) and what was deleted.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    day: int
    say: str
    query: str
    current: str | None
    stale: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Script:
    script_id: str
    lang: str
    steps: tuple[Step, ...]


CHATTER = {
    "ko": ("오늘 날씨 진짜 좋다", "점심으로 김밥 먹었어", "주말에 영화 볼까 생각 중이야", "요즘 드라마 재밌는 거 있어?", "어제 늦게 잤더니 피곤해"),
    "en": ("The weather is lovely today", "I had a sandwich for lunch", "Thinking about watching a movie this weekend", "Any good shows lately?", "I stayed up late yesterday"),
}

SCRIPTS: tuple[Script, ...] = (
    Script("ko-job", "ko", (
        Step(0, "나는 은행에 다녀", "직장이 어디야?", "은행"),
        Step(30, "은행 그만두고 지금은 게임 회사에 다녀", "직장이 어디야?", "게임 회사", stale=("은행",)),
        Step(90, "게임 회사도 그만뒀어", "직장이 어디야?", None, stale=("은행",), deleted=("게임 회사",)),
        Step(120, "출판사에 새로 취직했어", "직장이 어디야?", "출판사", stale=("은행", "게임 회사")),
    )),
    Script("ko-home", "ko", (
        Step(0, "나는 서울에 살아", "어디 살아?", "서울"),
        Step(45, "지난주에 부산으로 이사했어", "어디 살아?", "부산", stale=("서울",)),
        Step(200, "이제 제주도에 살아", "어디 살아?", "제주도", stale=("서울", "부산")),
    )),
    Script("ko-diet", "ko", (
        Step(0, "나는 채식주의자야", "식단 제한 있어?", "채식"),
        Step(60, "나 이제 채식주의자 아니야", "식단 제한 있어?", None, deleted=("채식",)),
    )),
    Script("ko-food", "ko", (
        Step(0, "제일 좋아하는 음식은 김치찌개야", "좋아하는 음식이 뭐야?", "김치찌개"),
        Step(50, "요즘 좋아하는 음식은 파스타야", "좋아하는 음식이 뭐야?", "파스타", stale=("김치찌개",)),
    )),
    Script("en-job", "en", (
        Step(0, "I work at Google", "Where do I work?", "Google"),
        Step(40, "I work at Microsoft now", "Where do I work?", "Microsoft", stale=("Google",)),
        Step(100, "I quit my job at Microsoft", "Where do I work?", None, stale=("Google",), deleted=("Microsoft",)),
    )),
    Script("en-home", "en", (
        Step(0, "I live in Seoul", "Where do I live?", "Seoul"),
        Step(30, "I moved to Berlin last month", "Where do I live?", "Berlin", stale=("Seoul",)),
        Step(150, "I moved to Paris in the spring", "Where do I live?", "Paris", stale=("Seoul", "Berlin")),
    )),
    Script("en-pets", "en", (
        Step(0, "I have a dog named Max", "What pets do I have?", "dog"),
        Step(20, "I also have a cat now", "What pets do I have?", "cat"),
        Step(80, "I don't have a cat anymore", "What pets do I have?", "dog", deleted=("cat",)),
    )),
    Script("en-color", "en", (
        Step(0, "My favorite color is green", "What is my favorite color?", "green"),
        Step(60, "My favorite color is blue now", "What is my favorite color?", "blue", stale=("green",)),
    )),
)
