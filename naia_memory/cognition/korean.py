"""How Korean says it, read from Kiwi's morphemes: who the sentence is about,
its mood (a condition, a wish, a plan), whether it asks, whether a thing
rather than the speaker does what it says, and the verbs of switching.
``statements.read`` combines these with the cue lexicons of both languages."""
from __future__ import annotations

import re
from typing import Sequence


_KO_RELATIONS = ("애", "아이", "애기", "첫째", "둘째", "막내", "큰아버지", "작은아버지", "외할머니", "외할아버지", "큰엄마", "고모부",
                 "이모부", "형부", "매형", "처제", "시어머니", "시아버지", "장모님", "장인어른", "사위", "며느리", "손자", "손녀", "언니", "오빠", "형", "누나", "동생", "엄마", "아빠", "어머니", "아버지", "부모님", "남편", "아내", "와이프", "친구",
                 "동료", "여자친구", "남자친구", "여친", "남친", "아들", "딸", "상사", "팀장", "사촌", "삼촌", "이모", "고모", "할머니",
                 "할아버지", "조카", "룸메", "룸메이트", "애인", "남동생", "여동생", "부장", "과장", "선배", "후배")
# after a name, these call the person by it ("지영 언니" is 지영); other relations are that person's ("민수 엄마")
_KO_TITLES = frozenset(("언니", "오빠", "형", "누나", "선배", "후배", "팀장", "부장", "과장"))
_KO_TOPIC = ("은", "는")  # the subject is 이/가 (JKS), or the topic by form (도 is additive, 만 restrictive)


def _opening(morphs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The morphemes without punctuation, and without the speaker's possessive
    that may open the sentence (우리, 저희, 내, 제, 나의, 저의): "우리 언니가",
    "내 차가" open with what they are about."""
    lead = [(f, t) for f, t in morphs if t not in ("SF", "SP", "SS", "SE", "SO", "SW")]
    if lead[:2] in ([("나", "NP"), ("의", "JKG")], [("저", "NP"), ("의", "JKG")]):
        return lead[2:]
    return lead[1:] if lead and lead[0][0] in ("우리", "저희", "내", "제") else lead


def ko_subject(text: str, morphs: Sequence[tuple[str, str]]) -> str | None:
    """A person the sentence is about: a relation word or a name (NNP) carrying
    the subject/topic particle before the predicate ("민수는", "우리 언니가"),
    or opening the sentence without one (spoken Korean drops particles: "아빠
    택시 접으시고"). A name beside a relation is the more specific of the two
    ("우리 언니 지영이는", "지영 언니" -> 지영)."""
    if re.match(r"^\s*(나|저|난|전|내가|제가)(\s|는|도|가)", text):
        return None
    lead = _opening(morphs)
    names = []
    for i, (form, tag) in enumerate(lead[:4]):
        nxt = lead[i + 1] if i + 1 < len(lead) else ("", "")
        marked = nxt[1] == "JKS" or nxt[1] == "JX" and nxt[0] in _KO_TOPIC
        if tag == "XSN" and form == "이" and names and names[-1][0]:
            continue  # the familiar 이 after a name ("수진이 동생은")
        if nxt[1] in ("JKB", "JKO", "JC", "JKG") and not names:
            break  # "남친이랑 2년 사귐", "엄마한테 혼났어": with or to them, the speaker's doing
        if form in _KO_RELATIONS and (i == 0 or names):
            if names and names[-1][0] and nxt[1] in ("JKB", "JKO", "JC", "JKG", "XSN"):
                break  # "민수 여친이랑 헤어졌대", "민호 친구들이랑": with the relation, the named person's doing
            names.append((False, form))
        elif tag == "NNP" and _looks_like_person(form, morphs) and (i == 0 and (marked or nxt[0] in _KO_RELATIONS or nxt[1] in ("VCP", "XSN"))
                                                                     or names and not names[-1][0]):  # "동생 민호"
            names.append((True, form))
        elif tag == "NNG" and names and not names[-1][0] and _looks_like_person(form, morphs) \
                and (marked or nxt[1] in ("NNG", "NNP", "SL")):  # "친구 지수 스타벅스에서": Kiwi reads 지수 as "index"
            names.append((True, form))
        elif not tag.startswith(("J", "X")) or names:
            break  # the sentence is about something else (or we have our person)
        if marked:
            break
    if names and not any(named for named, _ in names):
        spelt = _name_after_relation(text, names[-1][1])
        if spelt:
            return spelt
    if len(names) >= 2 and names[0][0] and not names[1][0] and names[1][1] not in _KO_TITLES:
        return f"{ko_bare_name(names[0][1])} {names[1][1]}"  # "수진이 동생은", "민수 엄마는": that person's relation
    if names:
        return sorted(names, key=lambda x: not x[0])[0][1]  # a name first, else the relation
    return None


def ko_bare_name(word: str) -> str:
    """A Korean name without the particle or the familiar 이 chat adds to it
    ("하은이가" -> 하은, "민석이" -> 민석, "지수는" -> 지수); other words as they are."""
    m = re.fullmatch(r"([가-힣]{2,3}?)(이가|이는|이도|이랑|이한테|이|가|는|은|도)?", word)
    if m and m.group(2) and all(ch in _NAME_SYLLABLES for ch in m.group(1)):
        return m.group(1)
    return word


def _name_after_relation(text: str, relation: str) -> str | None:
    """Kiwi splits a name it does not know into a verb and its ending ("하은이" ->
    하/VV 은/EC 이/MM): the word right after the relation is the name when it is
    made of name syllables ("친구 하은이 스타벅스에서 일해" -> 하은)."""
    m = re.match(rf"^\s*(?:우리|내|제|저희)?\s*{re.escape(relation)}\s+([가-힣]{{2,5}})(?=\s)", text)
    if not m:
        return None
    name = ko_bare_name(m.group(1))
    return name if name != m.group(1) else None  # only with the particle or 이 a name carries ("친구 수영 다녀": swimming)


# syllables of Korean given names (and the common surnames): Kiwi tags places,
# brands and diets NNP too ("키토는" is not a person), names are made of these
_NAME_SYLLABLES = frozenset("민수현우지영서준도윤재훈석호희진은혜성경아연주하유정태용상철광명동기한선미소나예채다인승규범찬혁건"
                            "시원창남식춘옥순자숙란애향화길봉덕종근열웅환탁빈율온결봄솔별린담강김이박최조장임오신권황안송류홍전고문양손배백허노심곽성차구우주나")


def _looks_like_person(form: str, morphs: Sequence[tuple[str, str]]) -> bool:
    return bool(re.fullmatch(r"[가-힣]{2,3}", form)) and all(ch in _NAME_SYLLABLES for ch in form)


_KO_BUT = frozenset(("는데", "ᆫ데", "은데", "지만", "는데요", "ᆫ데요"))
_KO_HABITUAL = frozenset("무조건 항상 늘 맨날 매번 언제나 꼭".split())
_KO_WH = frozenset("뭐 무엇 뭘 누구 누가 어디 언제 왜 어떻게 얼마 몇 어느 무슨 어떤 어때".split())


def ko_plain_polite(s: str, morphs: Sequence[tuple[str, str]]) -> bool:
    """A statement in the plain polite ending that only looks like a question
    in writing: "학교 가요", "동호회 나가요" end in 가요/나요, but the ending is
    -아요/-어요 on 가다/나가다 (Kiwi), with no question mark and no question
    word; "먹나요", "괜찮은가요", "어디 가요" still ask."""
    if "?" in s:
        return False
    ends = [f for f, t in morphs if t == "EF"]
    return bool(ends) and ends[-1] in ("어요", "아요", "여요") and not any(f in _KO_WH for f, _ in morphs)


# endings that ask: "더 낫나", "괜찮을까", "맞니", "그런가"
_KO_ASKING = frozenset(("나", "니", "냐", "까", "ᆯ까", "을까", "ᆫ가", "은가", "는가", "나요", "가요", "까요", "ᆯ까요", "을까요"))


def ko_asks_last(morphs: Sequence[tuple[str, str]]) -> bool:
    """The last sentence ends in an asking ending: after a question mark,
    "요가 말고 필라테스는 어때요? 허리엔 그게 더 낫나" is still asking."""
    last = [(f, t) for f, t in morphs if not t.startswith("S")][-1:]  # Kiwi tags a closing 나 EC as often as EF
    return bool(last) and last[0][1] in ("EF", "EC") and last[0][0] in _KO_ASKING


def ko_mood(morphs: Sequence[tuple[str, str]]) -> str | None:
    """The mood Korean marks in its endings (Kiwi's tags), whatever the verb:
    a condition (-면, unless a habit: "가면 무조건"), a wondering (-ㄹ까, -ㄹ지), a wish (-고 싶-), a
    possibility (-ㄹ 수도 있-), an obligation not met (-어야 되는데) are "hypothetical"; a future (-ㄹ 거-), an
    intention (-겠-, -어야지) are "plan"; trying as an intention (-어 보려고) is
    "hypothetical"; else None. (-기로 했다, "decided
    to", takes effect when said: "해산물은 먹기로 했어" is today's diet.)"""
    tags = list(morphs)
    habit = any(f in _KO_HABITUAL for f, _ in tags)  # "카페 가면 무조건 바닐라라떼": whenever, not if
    for i, (f, t) in enumerate(tags):
        nxt = tags[i + 1] if i + 1 < len(tags) else ("", "")
        after = tags[i + 2] if i + 2 < len(tags) else ("", "")
        if t == "EC" and f.endswith("면") and not habit or t in ("EC", "EF") and f in ("ᆯ까", "을까", "ᆯ지", "을지", "ᆯ지도") \
                or t == "VX" and f == "싶" or t == "ETM" and f in ("ᆯ", "을") and nxt[0] == "수" and after[0] == "도" \
                or t == "EC" and f in ("어야", "아야", "여야") and nxt[0] in ("되", "하") and after[0] in _KO_BUT:
            return "hypothetical"  # "줄여야 되는데": should, but not done; "조심해야 해" is a standing must
    ends = [i for i, (_, t) in enumerate(tags) if t in ("EF", "EC")]
    last = tags[ends[-1]][0] if ends else ""
    # the one clause of its sentence: "살 빼보려고" after "매일 헬스장 다녀," is the habit's purpose
    own = [i for i in ends[:-1] if not (i + 1 < len(tags) and tags[i + 1] == ("보", "VX"))]
    if last.startswith(("려", "으려")) and any(t == "VX" and f == "보" for f, t in tags) and not own \
            and not any(t == "EP" for _, t in tags):
        return "hypothetical"  # "12시 전에 자보려구요": going to try; nothing has changed yet
    for i, (f, t) in enumerate(tags):
        nxt = tags[i + 1] if i + 1 < len(tags) else ("", "")
        if t == "ETM" and f in ("ᆯ", "을") and nxt == ("거", "NNB") or t == "EP" and f == "겠" \
                or t == "EF" and f in ("어야지", "아야지"):
            return "plan"
    return None


# Korean connectives after which a later clause can have the speaker as its (dropped) subject
_KO_LINKS = frozenset(("어서", "아서", "서", "고", "니까", "으니까", "는데", "ᆫ데", "은데", "지만", "면서", "으면서"))


def ko_thing_does(morphs: Sequence[tuple[str, str]]) -> bool:
    """The sentence opens with a thing marked as the subject (이/가) that does
    something (a verb, not a description), and no
    connective lets a later clause be the speaker's: "한의원이 옆 건물로
    이사했더라" is the clinic's doing; "회사가 망해서 백수 됐어" ends with the speaker's."""
    lead = _opening(morphs)
    i = 0
    while i < len(lead) and lead[i][1] in ("NNG", "NNP", "NNB", "SL", "SN", "XSN"):
        i += 1
    if i == 0 or i >= len(lead) or lead[i][1] != "JKS":
        return False
    rest = lead[i + 1:]
    head = next((t for _, t in rest if t.startswith(("VV", "VA", "VCP", "VCN", "XSV", "XSA"))), None)
    if head not in ("VV", "XSV"):
        return False  # a description ("고양이 이름이 보리야", "일이 많아"), not a doing
    if any(t == "EP" and f in ("시", "으시") for f, t in rest):
        return False  # honorific: a person ("집주인 할머니가 좋으셔")
    if any(t == "NP" and f in ("나", "저", "내", "제") for f, t in rest):
        return False  # the speaker is in it ("의사쌤이 나한테 …")
    return not any(t == "EC" and f in _KO_LINKS and j < len(rest) - 1 for j, (f, t) in enumerate(rest))


_SHORT_SPANS = frozenset("일 주 주일 달 개월 며칠 보름 이틀 사흘 나흘".split())


def ko_came_about(morphs: Sequence[tuple[str, str]]) -> bool:
    """A state that came about, said by the grammar rather than a cue word:
    "-게 되다" ("마트를 아예 안 가게 됨": came to not go), and "-ㄴ 지 <days,
    weeks, months> 됐다" ("정신과 다닌 지 한 달 됐는데": began a month ago; years
    tell how long, not a change, as "since 2019" does in English)."""
    for i, (f, t) in enumerate(morphs):
        nxt = morphs[i + 1] if i + 1 < len(morphs) else ("", "")
        if f == "게" and t == "EC" and nxt[0] == "되" and nxt[1] in ("VV", "VX"):
            return True
        if f == "지" and t == "NNB" and i and morphs[i - 1][1] == "ETM":
            span = morphs[i + 1: i + 5]
            unit = next((g for g, u in span if u in ("NNB", "NNG") and g in _SHORT_SPANS), None)
            if unit and any(g in ("되", "넘", "지나") and u.startswith("V") for g, u in span):
                return True
    return False


# Korean verbs of switching, by lemma: "갈아탐", "갈아탔어", "갈아타고" are one verb
KO_SWITCH_LEMMAS = frozenset({"갈아타", "바꾸", "옮기", "넘어오", "넘어가", "이사", "이직", "전직", "등록", "구입", "장만", "입사", "취직", "취업",
                               "합격", "올리", "내리", "늘리", "줄이", "시작", "차리", "개업", "창업", "바뀌", "가입", "돌아오", "돌아가",
                               # getting a thing that takes the place of one ("개통했어", "출고했다", "차 뽑았어")
                               "개통", "출고",
                               # moved within an employer ("재무팀으로 발령 났어요", "지방으로 전근 갔어")
                               "발령", "전근", "전보"})


def ko_switched(morphs: Sequence[tuple[str, str]]) -> bool:
    """A verb of switching that is said as done or going on, not in the
    unrealised adnominal -ㄹ ("옮길 이유가 없어": no reason to move; "바꿀 때
    됐다": time to change) nor as a wondering (-ㄹ까): those name a switch
    that has not happened."""
    for i, (f, t) in enumerate(morphs):
        if f not in KO_SWITCH_LEMMAS:
            continue
        j = i + 1
        while j < len(morphs) and (morphs[j][1] in ("XSV", "XSA") or t.startswith("NN") and morphs[j] in (("가", "VV"), ("오", "VV"))):
            j += 1  # 이직/NNG 하/XSV ᆯ/ETM; 이사/NNG 가/VV ᆯ/ETM
        nxt = morphs[j] if j < len(morphs) else ("", "")
        if not (nxt[1] in ("ETM", "EF", "EC") and nxt[0].startswith(("ᆯ", "을"))):
            return True
    return False


def ko_goes_on(text: str, morphs_of) -> bool:
    """After a word that ends something and links with -고 ("페스코도 그만두고",
    "스마트스토어 정리하고"), a clause says what holds now: "간헐적 단식만 해".
    Not "-고 나서" (after), nor a clause that is past ("그만두고 여행 다녀왔어"),
    denied or planned. ``morphs_of``: Kiwi's (form, tag) pairs of a text."""
    m = re.search(r"(그만두|그만하|끊|관두|접|팔|정리하|해지하|탈퇴하|퇴사하|나오)고\s+(?!나서|나니|나면)(?P<rest>[^,.!?]+)", text)
    if m is None:
        return False
    rest = m.group("rest")
    tags = list(morphs_of(rest))
    if any(t == "EP" for _, t in tags) or ko_mood(tags) is not None:
        return False
    if any((f, t) in (("안", "MAG"), ("못", "MAG"), ("않", "VX"), ("없", "VA")) for f, t in tags) \
            or re.search(r"(그만|끊|예정|거야|려고|려구)", rest):  # denied or planned ("안양에서" is a place)
        return False
    return any(t in ("NNG", "NNP", "SL") for _, t in tags) and any(t.startswith(("VV", "XSV", "VA", "XSA", "VCP")) for _, t in tags)


__all__ = ["KO_SWITCH_LEMMAS", "ko_asks_last", "ko_bare_name", "ko_came_about", "ko_goes_on", "ko_mood", "ko_plain_polite",
           "ko_subject", "ko_switched", "ko_thing_does"]
