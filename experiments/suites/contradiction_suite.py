"""A labelled contradiction suite, Korean and English.

Each case: facts the user stated earlier, one new utterance, and the expected
outcome: ``update`` (the new statement replaces fact i), ``delete`` (fact i
stops being true, nothing replaces it) or ``keep`` (every fact stays
current). The keep cases are the false-positive traps: another attribute of
the same entity, a list-valued attribute, a refinement, a reaffirmation, a
negated question, a hypothetical, someone else's attribute, a past mention.
Cases are built from small value lists
crossed with phrasings, so each category is covered many times over.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import islice


@dataclass(frozen=True)
class Case:
    case_id: str
    lang: str
    category: str
    existing: tuple[str, ...]
    new: str
    expected: str  # "update" | "delete" | "keep"
    target: int | None = None
    attr: str | None = None  # what the fact is about, in the writer's words (natural suite)
    listed: bool | None = None  # whether that is one of the rules' known attributes (natural suite)
    subject: str = "user"
    split: str | None = None
    batch: int | None = None  # natural suite: which written batch (1, 2) it came from
    padding: int = 0  # how many of ``existing`` are other facts told first (suites.natural.padded)


KO_JOBS = ["디자인 회사", "은행", "게임 회사", "출판사", "병원", "대기업", "광고 회사", "스타트업"]
KO_CITIES = ["서울", "부산", "대구", "인천", "광주", "대전", "제주도", "수원"]
KO_PETS = ["강아지", "고양이", "앵무새", "햄스터", "거북이"]
KO_COLORS = ["초록색", "파란색", "빨간색", "보라색", "노란색"]
KO_LIKES = ["커피", "녹차", "등산", "요리", "수영", "독서"]
EN_JOBS = ["Google", "a bank", "a design studio", "Microsoft", "a hospital", "a startup", "Amazon", "a law firm"]
EN_CITIES = ["Seoul", "Berlin", "Paris", "Boston", "Tokyo", "London", "Madrid", "Toronto"]
EN_PETS = ["dog", "cat", "parrot", "hamster", "rabbit"]
EN_COLORS = ["green", "blue", "red", "purple", "yellow"]
EN_LIKES = ["coffee", "tea", "hiking", "cooking", "swimming", "chess"]


def _pairs(values: list[str], n: int) -> list[tuple[str, str]]:
    out = [(a, b) for i, a in enumerate(values) for b in values[i + 1:]]
    return list(islice(out, n))


def korean_cases() -> list[Case]:
    c: list[Case] = []
    add = c.append
    for i, (a, b) in enumerate(_pairs(KO_JOBS, 8)):
        add(Case(f"ko-job-{i}", "ko", "update:job", (f"나는 {a}에 다녀",), [f"{a} 그만두고 지금은 {b}에 다녀", f"{b}로 이직했어"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(KO_CITIES, 8)):
        add(Case(f"ko-home-{i}", "ko", "update:residence", (f"나는 {a}에 살아",), [f"지난달에 {b}로 이사했어", f"이제 {b}에 살아"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(KO_COLORS, 5)):
        add(Case(f"ko-color-{i}", "ko", "update:preference", (f"제일 좋아하는 색은 {a}이야",), f"이제 좋아하는 색은 {b}이야", "update", 0))
    for i, s in enumerate(["나 이제 채식주의자 아니야", "채식 그만뒀어", "더 이상 채식 안 해"]):
        add(Case(f"ko-veg-{i}", "ko", "delete:diet", ("나는 채식주의자야",), s, "delete", 0))
    for i, a in enumerate(KO_JOBS[:4]):
        add(Case(f"ko-quit-{i}", "ko", "delete:job", (f"나는 {a}에 다녀",), f"{a} 그만뒀어", "delete", 0))
    # traps
    for i, (a, b) in enumerate(zip(KO_JOBS, KO_CITIES)):
        add(Case(f"ko-otherattr-{i}", "ko", "keep:other-attribute", (f"나는 {a}에 다녀",), f"나는 {b}에 살아", "keep"))
    for i, (a, b) in enumerate(_pairs(KO_PETS, 6)):
        add(Case(f"ko-list-{i}", "ko", "keep:list-valued", (f"나는 {a}를 키워",), f"{b}도 키워", "keep"))
    for i, (a, b) in enumerate(_pairs(KO_LIKES, 5)):
        add(Case(f"ko-likes-{i}", "ko", "keep:list-valued", (f"나는 {a}를 좋아해",), f"{b}도 좋아해", "keep"))
    for i, a in enumerate(KO_JOBS[:5]):
        add(Case(f"ko-refine-{i}", "ko", "keep:refinement", (f"나는 {a}에 다녀",), f"나는 강남에 있는 {a}에 다녀", "keep"))
    for i, a in enumerate(KO_JOBS[:5]):
        add(Case(f"ko-reaffirm-{i}", "ko", "keep:reaffirmation", (f"나는 {a}에 다녀",), f"아직 {a}에서 일하고 있어", "keep"))
    for i, a in enumerate(KO_JOBS[:5]):
        add(Case(f"ko-negq-{i}", "ko", "keep:negated-question", (f"나는 {a}에 다녀",), f"너는 내가 {a} 그만둔 거 아니지?", "keep"))
    for i, (a, b) in enumerate(_pairs(KO_CITIES, 5)):
        add(Case(f"ko-hypo-{i}", "ko", "keep:hypothetical", (f"나는 {a}에 살아",), f"만약 {b}로 이사하면 어떨까", "keep"))
    # other phrasings of real updates, written apart from the rule set
    for i, (a, b) in enumerate(_pairs(KO_JOBS[2:], 4)):
        add(Case(f"ko-job2-{i}", "ko", "update:job", (f"나는 {a}에 다녀",), [f"요즘은 {b}에서 일해", f"{b}에 새로 취직했어"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(KO_CITIES[2:], 3)):
        add(Case(f"ko-home2-{i}", "ko", "update:residence", (f"나는 {a}에 살아",), f"{b}로 이사 왔어", "update", 0))
    # someone else's job is not the user's; a past home is not a move
    for i, (a, b) in enumerate(zip(KO_JOBS[:4], KO_JOBS[4:])):
        add(Case(f"ko-othersubj-{i}", "ko", "keep:other-subject", (f"나는 {a}에 다녀",), f"우리 언니는 {b}에 다녀", "keep"))
    for i, (a, b) in enumerate(zip(KO_CITIES[:3], KO_CITIES[3:])):
        add(Case(f"ko-past-{i}", "ko", "keep:past-mention", (f"나는 {a}에 살아",), f"어릴 때는 {b}에 살았어", "keep"))
    return c


def english_cases() -> list[Case]:
    c: list[Case] = []
    add = c.append
    for i, (a, b) in enumerate(_pairs(EN_JOBS, 8)):
        add(Case(f"en-job-{i}", "en", "update:job", (f"I work at {a}",), [f"I left {a} and now I work at {b}", f"I work at {b} now"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(EN_CITIES, 8)):
        add(Case(f"en-home-{i}", "en", "update:residence", (f"I live in {a}",), [f"I moved to {b} last month", f"I'm living in {b} now"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(EN_COLORS, 5)):
        add(Case(f"en-color-{i}", "en", "update:preference", (f"My favorite color is {a}",), f"My favorite color is {b} now", "update", 0))
    for i, s in enumerate(["I'm not vegetarian anymore", "I stopped being vegetarian", "I'm no longer a vegetarian"]):
        add(Case(f"en-veg-{i}", "en", "delete:diet", ("I'm vegetarian",), s, "delete", 0))
    for i, a in enumerate(EN_JOBS[:4]):
        add(Case(f"en-quit-{i}", "en", "delete:job", (f"I work at {a}",), f"I quit my job at {a}", "delete", 0))
    # traps
    for i, (a, b) in enumerate(zip(EN_JOBS, EN_CITIES)):
        add(Case(f"en-otherattr-{i}", "en", "keep:other-attribute", (f"I work at {a}",), f"I live in {b}", "keep"))
    for i, (a, b) in enumerate(_pairs(EN_PETS, 6)):
        add(Case(f"en-list-{i}", "en", "keep:list-valued", (f"I have a {a}",), f"I also have a {b}", "keep"))
    for i, (a, b) in enumerate(_pairs(EN_LIKES, 5)):
        add(Case(f"en-likes-{i}", "en", "keep:list-valued", (f"I love {a}",), f"I also love {b}", "keep"))
    for i, a in enumerate(EN_JOBS[:5]):
        add(Case(f"en-refine-{i}", "en", "keep:refinement", (f"I work at {a}",), f"I work at {a} in the marketing team", "keep"))
    for i, a in enumerate(EN_JOBS[:5]):
        add(Case(f"en-reaffirm-{i}", "en", "keep:reaffirmation", (f"I work at {a}",), f"I still work at {a}", "keep"))
    for i, a in enumerate(EN_JOBS[:5]):
        add(Case(f"en-negq-{i}", "en", "keep:negated-question", (f"I work at {a}",), f"You don't think I quit {a}, do you?", "keep"))
    for i, (a, b) in enumerate(_pairs(EN_CITIES, 5)):
        add(Case(f"en-hypo-{i}", "en", "keep:hypothetical", (f"I live in {a}",), f"If I moved to {b}, I would learn the language", "keep"))
    for i, (a, b) in enumerate(_pairs(EN_JOBS[2:], 4)):
        add(Case(f"en-job2-{i}", "en", "update:job", (f"I work at {a}",), [f"I got a new job at {b}", f"I just started working for {b}"][i % 2], "update", 0))
    for i, (a, b) in enumerate(_pairs(EN_CITIES[2:], 3)):
        add(Case(f"en-home2-{i}", "en", "update:residence", (f"I live in {a}",), f"We relocated to {b} in the spring", "update", 0))
    for i, (a, b) in enumerate(zip(EN_JOBS[:4], EN_JOBS[4:])):
        add(Case(f"en-othersubj-{i}", "en", "keep:other-subject", (f"I work at {a}",), f"My sister works at {b}", "keep"))
    for i, (a, b) in enumerate(zip(EN_CITIES[:3], EN_CITIES[3:])):
        add(Case(f"en-past-{i}", "en", "keep:past-mention", (f"I live in {a}",), f"I lived in {b} when I was a kid", "keep"))
    return c


def all_cases() -> list[Case]:
    return korean_cases() + english_cases()


# Free-form cases written after the rules were last changed and never used to
# tune them: the held-out check on how far the templates' numbers generalise.
HELD_OUT: tuple[Case, ...] = (
    Case("ho-ko-1", "ko", "update:job", ("나는 출판사에서 편집자로 일해",), "출판사 관두고 프리랜서 번역가로 일하고 있어", "update", 0),
    Case("ho-ko-2", "ko", "update:residence", ("나는 서울 마포구에 살아",), "드디어 판교로 이사했어", "update", 0),
    Case("ho-ko-3", "ko", "delete:diet", ("나는 비건이야",), "요즘은 비건 안 해", "delete", 0),
    Case("ho-ko-4", "ko", "update:relationship", ("나는 여자친구가 있어",), "지난주에 결혼했어", "update", 0),
    Case("ho-ko-5", "ko", "update:preference", ("좋아하는 음식은 김치찌개야",), "요즘 좋아하는 음식은 파스타야", "update", 0),
    Case("ho-ko-6", "ko", "keep:list-valued", ("나는 영어를 할 줄 알아",), "일본어도 할 줄 알아", "keep"),
    Case("ho-ko-7", "ko", "keep:other-attribute", ("나는 은행에 다녀",), "은행 일이 요즘 너무 바빠", "keep"),
    Case("ho-ko-8", "ko", "keep:hypothetical", ("나는 대구에 살아",), "혹시 서울로 이사 가게 되면 알려줄게", "keep"),
    Case("ho-ko-9", "ko", "keep:negated-question", ("나는 채식주의자야",), "내가 고기 안 먹는 거 알지?", "keep"),
    Case("ho-ko-10", "ko", "keep:other-subject", ("나는 부산에 살아",), "친구는 서울에 살아", "keep"),
    Case("ho-ko-11", "ko", "keep:reaffirmation", ("나는 강아지를 키워",), "우리 강아지 벌써 다섯 살이야", "keep"),
    Case("ho-ko-12", "ko", "keep:past-mention", ("나는 게임 회사에 다녀",), "예전에 은행에서 일했었어", "keep"),
    Case("ho-ko-13", "ko", "update:job", ("나는 대학생이야",), "졸업하고 회사에 취직했어", "update", 0),
    Case("ho-ko-14", "ko", "delete:pets", ("나는 고양이를 키워",), "고양이는 이제 안 키워", "delete", 0),
    Case("ho-ko-15", "ko", "keep:refinement", ("나는 서울에 살아",), "서울 강남구에 살아", "keep"),
    Case("ho-en-1", "en", "update:job", ("I'm a nurse at a hospital",), "I changed careers and I'm a teacher now", "update", 0),
    Case("ho-en-2", "en", "update:residence", ("I live in Chicago",), "Just moved to Denver!", "update", 0),
    Case("ho-en-3", "en", "delete:diet", ("I'm vegan",), "I eat meat again these days", "delete", 0),
    Case("ho-en-4", "en", "update:relationship", ("I'm single",), "I got married in June", "update", 0),
    Case("ho-en-5", "en", "update:preference", ("My favorite food is sushi",), "These days my favorite food is ramen", "update", 0),
    Case("ho-en-6", "en", "keep:list-valued", ("I speak Spanish",), "I speak French too", "keep"),
    Case("ho-en-7", "en", "keep:other-attribute", ("I work at a bank",), "The bank is closed on Sundays", "keep"),
    Case("ho-en-8", "en", "keep:hypothetical", ("I live in Austin",), "Maybe I'll move to Seattle someday", "keep"),
    Case("ho-en-9", "en", "keep:negated-question", ("I'm vegetarian",), "Didn't I tell you I don't eat meat?", "keep"),
    Case("ho-en-10", "en", "keep:other-subject", ("I live in Boston",), "My brother lives in Miami", "keep"),
    Case("ho-en-11", "en", "keep:reaffirmation", ("I have a dog",), "My dog is turning five next week", "keep"),
    Case("ho-en-12", "en", "keep:past-mention", ("I work at Google",), "I used to work at a bakery", "keep"),
    Case("ho-en-13", "en", "update:job", ("I'm a student",), "I graduated and started working at Stripe", "update", 0),
    Case("ho-en-14", "en", "delete:pets", ("I have a cat",), "I don't have a cat anymore", "delete", 0),
    Case("ho-en-15", "en", "keep:refinement", ("I live in Paris",), "I live in Paris, in the 11th arrondissement", "keep"),
)
