"""How a sentence is said: is it a fact, about whom, and how does it relate to time?

Updating a memory needs more than a topic label. "I also play guitar" adds,
"I don't play anymore" ends, "I used to live in Tokyo" tells of the past,
"maybe I'll move to Seattle" changes nothing, "Jake left Tesla" is about
Jake. These are properties of the language (cue words, particles, verb
endings, mood), not of any attribute, so they are read here once for every
sentence, in Korean (from Kiwi's morphemes: the additive particle 도, the
conditional ending 면, the retrospective 었었/던) and English.

``read`` is pure: the text and a tokenizer in, a ``Reading`` out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .contradiction import GENERIC_WORDS
from .tokenize import has_hangul, stem_en
from .korean import ko_asks_last, ko_came_about, ko_goes_on, ko_mood, ko_plain_polite, ko_subject, ko_switched, ko_thing_does

# what a sentence that is not a fact is instead; the reason logged for it
NON_FACT = ("question", "greeting", "thanks", "filler", "request", "hypothetical", "small-talk")


@dataclass(frozen=True)
class Reading:
    text: str
    kind: str  # "fact" or one of NON_FACT
    subject: str | None  # None: the speaker; else the person named ("Jake", "언니")
    negated: bool  # "I don't ...", "안 ...", "더 이상 ..."
    past: bool  # how things were ("used to", "예전에", "살았었어"), not the present
    plan: bool  # decided but not yet so ("I'm moving to Seattle next month", "다음 달에 이사 가")
    change: bool  # the present differs from before ("now", "이제", or a switch below)
    switch: bool  # a verb of switching, starting, joining, buying ("switched to", "갈아탔어", "instead")
    episodic: bool  # a one-off event ("I had a sandwich for lunch", "어제 늦게 잤어"): it happened, nothing to update
    renewal: bool  # a clause that says what holds now, positively ("..., it's all pottery now", "요즘은 레고 조립함")
    ending: bool  # something stops ("anymore", "quit", "그만", "끊었어")
    additive: bool  # one more value ("also", "too", "일본어도")
    still: bool  # the same as before ("still", "아직", "여전히")
    predicate: str | None  # the head verb or adjective stem ("live", "살", "타")
    content: frozenset[str]  # content tokens minus cue and generic words: what the sentence is about
    names: frozenset[str] = frozenset()  # tokens of proper nouns ("Civic", "카카오"): values that identify a thing
    personal: bool = True  # its grammatical subject is the speaker or the person named, not "it", "you", "the event"
    shift: bool = False  # says it differs from before ("now", "이제", "지금은", "a new"), not only that it holds these days
    replaces: bool = False  # names what was left behind: "instead of", "switched from", "X 대신", "X에서 Y로 바꿨어"
    denials: tuple[str, ...] = ()  # its clauses (lowercased) that deny a verb: "연세치과는 넘 멀어서 안 가요"
    goes_on: bool = False  # after what it ends, a clause says what holds now: "dropped German, taking a Japanese class"
    # (Korean: read whenever a verb of ending or winding up links with -고; ``updates`` asks only when something ended)

    @property
    def is_fact(self) -> bool:
        return self.kind == "fact"


# ---------------------------------------------------------------- English cues
_EN = {
    "question": re.compile(r"\?\s*$|^(do|does|did|is|are|am|was|were|have|has|can|could|would|will|should|shall|what|where|when|who|whom|why|how|which|any|anyone|anybody|how about|what about)\b", re.I),
    "greeting": re.compile(r"^\s*(hi|hello|hey|hiya|yo|good (morning|afternoon|evening|night)|morning|night|bye|see (you|ya)|what'?s up|sup)\b[\s!,.]*(there|again|everyone|buddy|[A-Z][a-z]+)?[\s!,.]*$", re.I),
    # a reaction to what the other said ("That's awesome, Melanie!", "Sounds great!"): nothing about anyone
    "reaction": re.compile(r"^\s*((oh|wow|aw+|yay|omg|haha|yes|yeah|ah)[\s,!]+)*((that'?s|that is|this is|it'?s|sounds|how|what an?|so)\s+)?(really\s+|so\s+|very\s+|totally\s+|super\s+)?"
                           r"(great|awesome|amazing|nice|cool|good|wonderful|fantastic|lovely|beautiful|sweet|fun|exciting|inspiring|terrific|incredible|impressive|neat|brilliant|perfect|true|right|crazy|sad|tough)"
                           r"(\s+(news|idea|day|job|stuff|work))?[\s,!.]*([A-Z][a-z]+[\s!.]*)?$", re.I),
    "thanks": re.compile(r"^\s*(oh|ok|okay|wow)?[\s,]*(thanks|thank you|thx|ty|cheers|much appreciated|appreciate it|that helped|this helped)\b", re.I),
    "filler": re.compile(r"^(\s*(ok(ay)?|k|lol|lmao|haha+|hah|cool|nice|great|yeah|yep|yes|no|nope|sure|hmm+|huh|got it|sounds good|i see|oh|wow|right|alright|fair enough|true|same|omg|ugh|mhm)\s*[!.?~,]*)+\s*([A-Z][a-z]+[!.?~]*)?\s*$", re.I),
    "request": re.compile(r"^\s*(please|pls|can you|could you|would you|will you|tell me|remind me|help me|show me|give me|find me|let me know|recommend|suggest|write|make me|set|book (a|me|an)|translate|summari[sz]e|explain|list|draft|fix|check|calculate|convert|rewrite|proofread)\b", re.I),
    "small-talk": re.compile(r"^\s*((wow|omg|ugh|man|geez|so|oh)[\s,!]+)?(it'?s|it is|it was|there'?s|there are|the (weather|traffic|sky|rain|snow|sun)|traffic|weather|today is|tonight is)\b", re.I),
    "hypothetical": re.compile(r"\b(if|might|maybe|perhaps|possibly|thinking (about|of)|considering|wondering|would (like|love)|i'?d (like|love)|wish|hope to|hoping to|not sure (if|whether)|should i|in case|want to|wanna|someday|some day|one day|eventually|tempted|debating|torn between|on the fence|lean(ing)? (towards?|to)|toying with|what if|dream(ing)? of|if only|should|ought to)\b", re.I),
    "plan": re.compile(r"\b(going to(?! (the|a|an|my|our|his|her|their|this|that|bed|work|school|church|class|(?-i:[A-Z])\w*)\b)|gonna|will|i'll|planning to|plan to|about to|next (week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|tomorrow|soon|starting (next|in))\b", re.I),
    "past": re.compile(r"\b((?<!getting )(?<!get )(?<!got )used to|back when|when i was|as a (kid|child|teen(ager)?)|growing up|in (high school|college|my twenties)|years ago|previously|formerly|back in (the )?\d{2,4}s?|once upon|(my|our) (very )?first \w+ (was|were|had|died)|before (this|that)(?=\s*([,.;!?]|$|(i|we|i'd|we'd|my|our)\b)))\b", re.I),
                      # a state in the simple past with how long it lasted is over ("lived in denver for 3 years";
                      # "have lived ... for 3 years" goes on, and is not this form)
    "over": re.compile(r"(?<!\bhave )(?<!\bhas )(?<!'ve )(?<!\bive )(?<!\bweve )\b(lived|worked|stayed|studied|taught|dated|played)\b[^.,;!?]{0,40}\bfor (\d+|a few|a couple( of)?|several|two|three|four|five|six|seven|eight|nine|ten|many) (years?|months?)\b(?![^.,;!?]*\b(still|now)\b)", re.I),
    "change": re.compile(r"\b(now|nowadays|these days|currently|finally|anymore|(a|my|our) new|got (a|my) new)\b", re.I),
    # the words of "change" that contrast with before, not those that only place a
    # statement in the present ("these days", "currently": a habit may be old)
    "shift": re.compile(r"\b((?<!right )(?<!for )(?<!just )(?<!until )(?<!by )now|finally|anymore|(a|my|our) new|got (a|my) new)\b"
                        r"|\bbeen \w+ing\b(?: \w+){0,4} since (i|we) \w+ed\b|\bbeen \w+ing\b(?: \w+){0,4} since (i|we) (got|bought|moved|left|quit|joined)\b"
                        # "been at rivian since march", "been going to the ymca since january": a state that began at a recent point
                        r"|\bbeen\b(?: [\w'-]+){0,5} since (jan(uary)?|feb(ruary)?|march|april|may|june|july|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?|"
                        r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|last (week|month|year|spring|summer|fall|autumn|winter|\w+day)|"
                        r"new year'?s?|the (start|beginning|end) of|this (week|month|year|spring|summer|fall|autumn|winter))\b"
                        # a state just begun: "first week at stripe", "day 3 at deloitte", "onboarding", "still getting used to"
                        r"|\b(first|1st) (day|week|month|shift|night)s? (at|with|as|in|on)\b(?! (a row|forever|ages|years|january|february|march|april|may|june|july|august|september|october|november|december)\b)(?![^.,;!?]*\b(this season|in (a|like|over)? ?(\d+|a|two|three|few|couple( of)?) (days|weeks|months|years|month|week|year))\b)|\b(day|week|month) (\d+|one|two|three|four|five) (at|with|on|in)\b(?! a row\b)"
                        r"|\b(my|the) onboarding\b|\bonboarding (at|with|is|was|week)\b|\bgetting used to\b", re.I),  # "been driving in since i got the car": a state that began
    "switch": re.compile(r"\bgot (a|an|the|my|our) (?-i:[A-Z0-9])|\b(switched|changed|moved( \w+){0,3}( over)?( to| in| into| over| up| down)|turned \d+|increased|decreased|raised|lowered|cut (down|back)|relocated|transferred|started|starting|began|took up|picked up|instead|replaced|overt(ook|aken)|upgraded|downgraded|swapped|traded|became|joined|went into|got into|signed up|bought|adopted|got hired|ported|opened|launched|took over|back (on|to)|down to|up to)\b", re.I),
    "ending": re.compile(r"(\b(anymore|any more|no longer|quit|quitting|stopped|gave up|(?<!my )(?<!the )(?<!his )(?<!her )(?<!our )(?<!your )(?<!on the )(?<!to the )left(?![- ](handed|hand|side|knee|leg|arm|eye|ear|foot|feet|shoulder|wrist|lane|turn|wing|field|over))|sold|broke up|split up|retired|dropped( out)?|cancel+ed|ended|got rid of|moved out|done with|no more|wrapped up|fell apart|shut down|took me off|laid off|got fired|(is|'s|are|was) ((officially|finally|totally|completely) )?(over|gone|done)|(is|'s|are|was) (officially|finally|totally|completely) dead|totall?ed|wrecked|(was|got) stolen|lost (my|our)|died|passed away|put (him|her|it) down|cut out|cutting out|ditched|dumped|resigned|stepped down|let go|moved on|walked away|unsubscribed|deleted|uninstalled|gave away|rehomed|divorced|separated|graduated|let (it|them|(my|our|the) (\w+ ){0,2}\w+) (lapse|expire)|expired|kicked the habit|sober|(got )?discharged|disbanded|(didn'?t|did not|not) renew(ing)?|call(ed)? off|put (him|her|it|them|[A-Z][a-z]+) down|closed (the|my|our|down|for good|permanently)|went (out of business|bust|under)|shelved)\b|n't\b.*\b(anymore|any more)\b"
                         # "played my last gig with the band" (not "my last haircut was in may": the latest, not the final)
                         r"|\b(played|worked|taught|finished|pulled) (my|our) (very )?(last|final) \w+(?! (of the|this|today|tonight|before)\b)|\b(my|our) (very )?final (day|shift|gig|class|session|game|show|lesson|practice|paycheck)\b(?! (of the|this|today|tonight|before)\b)(?!\s+(is|will)\b)"
                         r"|\b(today|yesterday|friday|this week|last week) was (my|our) (very )?last (day|shift|gig|class|session|game|show|lesson)\b"
                         # "3 weeks without a cigarette", "haven't had a drink since new year's": an abstention that began
                         r"|\b(days?|weeks?|months?|years?) (without|w/o|off|clean|sober)\b|\b(haven'?t|hasn'?t|havent|hasnt|have not|has not)\b[^.,;!?]{0,40}\bsince\b"
                         # "hasn't touched a cigarette in 6 weeks" (not "haven't talked to my mom in two weeks": a gap)
                         r"|\b(haven'?t|hasn'?t|havent|hasnt|have not|has not) (had|touched|smoked|vaped|drunk|drank)\b[^.,;!?]{0,30}"
                         r"\bin (\d+|a|two|three|four|five|six) (days?|weeks?|months?|years?)\b)", re.I),
    # "so two cars now": a count that grew
    "additive": re.compile(r"\b(also|as well|another|in addition|additionally|added|second|both)\b|\bplus\b(?! (my|i|i'm|the|it|its|it's|then)\b)|\btoo\b(?=\s*[,.!?)]|\s*$)"
                           r"|^(?!.*\b(down to|only|just|cut|less|fewer)\b).*\b(two|three|four|2|3|4) [a-z]+s now\b", re.I),
    "still": re.compile(r"\b(still|as always|as usual|yep still|same as before|remains?)\b", re.I),
    "negation": re.compile(r"\b(not|no|never|none|nobody|nothing)\b|n't\b|\b(anymore|no longer)\b", re.I),
    "first_person": re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|us|im|ive)\b", re.I),
}
_EN_RELATION = r"(sister|brother|mom|mother|dad|father|parents?|friend|wife|husband|partner|girlfriend|boyfriend|gf|bf|bff|hubby|fianc[eé]e?|son|daughter|kids?|colleague|coworker|co-worker|boss|manager|cousin|roommate|uncle|aunt|grandma|grandmother|grandpa|grandfather|niece|nephew|neighbor|neighbour|family|team|band|dog|cat)"
_EN_THIRD = re.compile(rf"^\s*(?:(?i:my|our)\s+(?i:(?:little|big|older|younger|best|old|new)\s+)?(?i:{_EN_RELATION})\b(?:\s+([A-Z][a-z]+))?|((?:[Aa]unt|[Uu]ncle|[Gg]randma|[Gg]randpa|[Cc]ousin)\s+[A-Z][a-z]+|[A-Z][a-z]+)(?:'s)?\s+(?!(?i:i|and\s+i|and\s+me|&\s+i)\b)[a-z])")
_EN_NOT_NAMES = frozenset({"I", "The", "This", "That", "These", "Those", "It", "There", "Here", "My", "Our", "We", "And", "But", "So",
                           "Just", "Also", "Now", "Then", "Today", "Yesterday", "Tomorrow", "Last", "Next", "Finally", "Still",
                           "Since", "After", "Before", "When", "If", "Maybe", "Btw", "Oh", "Well", "Yeah", "Yes", "No", "Not",
                           "Started", "Switched", "Moved", "Quit", "Sold", "Got", "Been", "Had", "Have", "Was", "Went", "Left",
                           "Took", "Picked", "Dropped", "Stopped", "Finished", "Working", "Living", "Doing", "Going", "Back",
                           "Every", "Most", "Some", "Lately", "Recently", "Honestly", "Actually", "Basically", "Sadly", "Luckily",
                           "Weather", "Traffic", "Work", "Life", "Everything", "Nothing", "Someone", "Everyone", "Gonna", "Gotta",
                           "Anyway", "Ugh", "Lol", "Haha", "Ok", "Okay", "Hmm", "Wow", "Omg", "Sorry", "Please", "Thanks",
                           "Can", "Could", "Would", "Will", "Should", "Did", "Do", "Does", "Is", "Are", "Am", "What", "Where",
                           "Who", "Why", "How", "Which", "Let", "Tell", "Remind", "Help", "Show", "Give", "Find", "Hi", "Hello", "Hey"})
_EN_CUE_WORDS = frozenset(stem_en(w) for w in (
    "now nowadays currently switched changed moved started starting began new instead finally anymore more longer quit quitting "
    "stopped stop gave give left leaving sold retired dropped ended also too well another addition second both plus still used "
    "ago previously formerly since just actually really lately recently back maybe perhaps might someday soon "
    "today yesterday tomorrow tonight morning day days week weeks weekend month months year years last next ago "
    "every each usually always often sometimes").split())  # how often is not what a fact is about

# ----------------------------------------------------------------- Korean cues
_KO = {
    "question": re.compile(r"\?\s*$|(니|냐|까|나요|가요|죠|지요|을래|ㄹ래|어때|뭐야|뭔데|인가)\s*[?.!~]*\s*$"),
    "greeting": re.compile(r"^\s*(안녕|하이|헬로|반가워|반갑습니다|좋은 아침|잘 자|굿모닝|굿나잇|다녀왔어|왔어|나 왔어|또 왔어)+\s*[!~.ㅎㅋ]*\s*(하세요|하십니까)?[!~.ㅎㅋ]*\s*$"),
    "thanks": re.compile(r"^\s*(오|아|와|진짜|정말|넘|너무)?\s*(고마워|고맙|감사|땡큐|ㄳ|ㄱㅅ)|^\s*(큰\s*)?(도움|도움이)\s*(많이\s*)?(됐|되었|돼)"),
    "filler": re.compile(r"^(\s*([ㅋㅎㅠㅜ]+|응+|어+|네+|예|그래|그렇구나|아하+|오케이|오키|ㅇㅇ|ㅇㅋ|헐|대박|와+|음+|아+|좋아|알겠어|알았어|맞아)\s*[!~.?ㅋㅎ,]*)+\s*$"),
    "request": re.compile(r"(줘\s*[.!?~]*\s*$|주세요\s*[.!?~]*\s*$|해\s?줘|해\s?주세요|알려\s?줘|알려\s?주세요|추천해|찾아\s?줘|부탁|줄래|주실래요|해\s?줄\s?수|보여\s?줘|정리해|써\s?줘|만들어\s?줘|기억해\s?줘|잡아\s?줘)"),
    "hypothetical": re.compile(r"(만약|만일|혹시|으면 좋겠|했으면|할까|갈까|볼까|살까|고민|싶어|싶다|싶은데|생각 중|생각중|지도 몰라|(?<=[가-힣])(지|진|지는)\s*모르겠|수도 있|려나|나 봐)"),
    "plan": re.compile(r"(예정|계획|할 거야|갈 거야|할거야|갈거야|ㄹ 거야|다음 주|다음주|다음 달|다음달|내년|내일|곧|려고)"),
    "past": re.compile(r"(예전에|옛날에|어릴\s*때|어렸을\s*때|학생\s*때|대학\s*때|그때는|그땐|전에는|한때)"),
    "change": re.compile(r"(이제|요즘|지금은|새로|새 |드디어|됐어|되었|원래|기로\s*(했|함|결정)(?!.*(다음|내년|부터|예정)))"),  # -기로 했어: decided, in effect
    # not 요즘 / 요새 (these days), 원래 (originally); 새 only as a word (not 냄새, 참새, 요새)
    # and a state just begun: "온보딩 3일째", "적응 중", "첫 주"
    "shift": re.compile(r"(이제|지금은|(?<![가-힣])새로|(?<![가-힣])새 |드디어|됐어|되었|온보딩|적응\s*중|적응하는|(입사|이사|출근|온보딩|등록|시작)[가-힣]*\s*\d+\s*일\s*째|(?<![가-힣])첫\s*(주|날|달)(?=[이라에은는도]|\s|$)"
                       # "대전 온 지 한 달 됐는데": weeks or months since one came or began, said as done (not "다닌 지
                       # 5년": a state; not "제주 온 지 3일째": a trip's days)
                       r"|(?<![가-힣])(온|옮긴|시작한|입사한|들어온|넘어온|바꾼|갈아탄|등록한)\s*지(가)?\s*(한|두|세|네|몇|\d+)\s*(주|주일|달|개월)\s*(째|[이가]?\s*(됐|되었|넘었|지났)))"),
    "switch": re.compile(r"((?<![가-힣])(신차|차)\s*뽑|바꿨|바꿔|바꿈|옮겼|옮김|전직|시작했|시작해|부터|대신|말고|갈아탔|갈아타|넘어왔|넘어갔|등록|샀어|샀다|샀어요|구입|장만|달았|첫 출근|첫출근|입사|취직|합격|생겼)"),
    "ending": re.compile(r"(더\s*이상|없이도|그만|금연|금주|끊었|끊고|끊어|끊은|관뒀|관두|퇴사|헤어졌|헤어짐|팔았|팔고|처분|접었|접고|접으|은퇴|휴학|자퇴|탈퇴|해지|없어졌|졸업|끝냈|끝났|끝내|닫았|닫고|뗐|해제|떠났|나왔|포기|잃어버렸|잃었|도난|폐차|죽었|돌아가셨|무지개\s*다리|이혼|파양|환불|반납|삭제|취소|중단|멈췄|손\s*놨|손\s*뗐|잘렸|짤렸|해고|권고사직|이별|폐업|폐점|문\s*닫|(다|전부|싹)\s*정리|해체|연장\s*안\s*(했|함|하|해)|마지막이었)"),
    "additive": re.compile(r"(하나\s*더|추가로|게다가|또\s)"),
    "still": re.compile(r"(아직|여전히|계속|변함없이|그대로)"),
    "negation": re.compile(r"(안\s|안[가-힣]|못\s|않|아니|없어|없다|없습|없고|없는|더\s*이상)"),
    "first_person": re.compile(r"(^|\s)(나|내|저|제|난|날|전|우리)(는|가|도|를|의|한테|랑|\s)|^(나|저)\s|(^|\s)(내|제)\s"),
}
_KO_CUE_FORMS = frozenset("이제 요즘 지금 새로 원래 다시 아직 여전히 계속 그만 더 이상 끊 관두 또 하나 추가 예전 옛날 대신 말 부터 드디어 "
                          "오늘 어제 내일 이번 지난 다음 작년 올해 내년 주말 주 달 년 월 일 전 후 혹시 만약 아마".split())


def _generic(tok: str) -> bool:
    return tok in GENERIC_WORDS or tok in _EN_CUE_WORDS or tok in _KO_CUE_FORMS


def morphemes(tokenizer, text: str) -> Sequence[tuple[str, str]]:
    """Kiwi's (form, tag) pairs for Korean text; () for other text or a tokenizer without Kiwi."""
    m = getattr(tokenizer, "_morphs", None)
    return m(text) if callable(m) and has_hangul(text) else ()


def _is_korean(text: str) -> bool:
    hangul = len(re.findall(r"[가-힣ㄱ-ㅎㅏ-ㅣ]", text))
    return hangul >= max(1, len(re.findall(r"[A-Za-z]", text)) // 3)


_EN_THIRD_VERB = re.compile(r"^\s*(?:[A-Z][a-z]+\s+)?[A-Z][a-z]+(?:'s|’s)?\s+(is|was|has|had|got|just|finally|and|'s|still|now|never|\w+s|\w+ed)\b")


# words that follow "my sister" without being her name ("my sister finally moved", "my boss gets ...")
_EN_AFTER_RELATION_NOT_NAME = frozenset(w.lower() for w in _EN_NOT_NAMES) | frozenset(
    "is was are were has had have does did do gets got goes went says said thinks wants works lives "
    "really also always never still just finally recently actually literally totally basically apparently officially "
    "already usually sometimes probably definitely now currently lowkey kinda sorta and or but who that which "
    "in at on from to with for of".split())
# what may follow a name: an auxiliary, an adverb of the moment, a past form, or a common verb of
# a person's state ("... mia works", "... jake moved"); not any word in -s ("my sister loves dogs",
# "my brother left his job": loves / left are not names)
_EN_AFTER_NAME = re.compile(r"(is|was|has|had|got|gets|just|finally|still|now|never|also|works|lives|says|said|wants|"
                            r"goes|does|teaches|studies|plays|runs|owns|drives|uses|likes|loves|hates|needs|thinks|"
                            r"\w+ed|'s|’s)$", re.I)


def _lowercase_name(text: str, end: int) -> str | None:
    """Chat is typed in lowercase: "my roommate mia works at the bakery" names
    mia as surely as "my roommate Mia" does. A word right after the relation
    is a name when a verb follows it and it is not itself a verb, an adverb or
    a function word ("my sister lives in busan", "my mom finally retired")."""
    w = re.match(r"\s+([a-z][a-z'’-]{1,14})\s+([a-z'’]+)", text[end:])
    if not w:
        return None
    name, nxt = w.group(1), w.group(2)
    if name in _EN_AFTER_RELATION_NOT_NAME or name.endswith("ing") or (name.endswith("ed") and len(name) > 4):
        return None
    return name if _EN_AFTER_NAME.fullmatch(nxt) else None


def _en_subject(text: str) -> str | None:
    m = _EN_THIRD.match(text)
    if not m:
        return None
    if m.group(1):
        return m.group(2) or _lowercase_name(text, m.end(1)) or m.group(1).lower()
    name = m.group(3)
    first = name.split()[0]
    # a capital opens every sentence: a name is followed by what a person does
    # ("Jake jumped ship", "Dana's been ..."), and is not itself a verb ("Traded the Tesla ...")
    if first in _EN_NOT_NAMES or first.lower().endswith(("ed", "ing")) or not (_EN_THIRD_VERB.match(text) or "'s" in text.split()[0]):
        return None
    whose = re.match(rf"^\s*{re.escape(name)}(?:'s|’s)\s+(?:(?:little|big|older|younger|best|old|new)\s+)?({_EN_RELATION})\b", text, re.I)
    return f"{name}'s {whose.group(1).lower()}" if whose else name  # "Jake's girlfriend" is not Jake


def _predicate(morphs: Sequence[tuple[str, str]], text: str) -> str | None:
    if morphs:
        heads = [f for f, t in morphs if t in ("VV", "VA")] or [f for f, t in morphs if t == "NNG"]
        return heads[-1] if heads else None
    m = re.search(r"\b(i|i'm|we|he|she|they|[A-Z][a-z]+)\s+(?:(?:am|'m|is|are|was|were|have|has|had|just|also|still|now|really|finally|don't|do|didn't|no longer|never)\s+)*([a-z]+)", text, re.I)
    return stem_en(m.group(2).lower()) if m else None


_DAY_WORDS = re.compile(r"\b(yesterday|today|tonight|this (morning|afternoon|evening)|last night)\b|어제|오늘|그저께|그제|아까|방금|어젯밤", re.I)
_HABIT = re.compile(r"\b(every|usually|always|often|most (days|nights|mornings)|each|daily|weekly|nowadays|these days|lately|still)\b|매일|매주|매달|보통|항상|맨날|자주|마다|요즘|(?<![가-힣])늘|계속|고 있|중이|째", re.I)
_EN_PAST = re.compile(r"(?:^|\b(?:i|we|i just|we just)\s+)((?!\w*eed\b)\w+ed|had|went|ate|got|made|saw|met|took|came|ran|slept|spent|did|was|were|bought|sold|left|told|found|caught|drank|read|wrote|won|lost|paid)\b", re.I)


def _episodic(s: str, ko: bool, morphs: Sequence[tuple[str, str]], switch: bool, ending: bool, change: bool = False) -> bool:
    """A one-off event, not a state: said of a given day, or in the past tense
    without a habit, a switch, an ending or a word for now ("shelved the app,
    now I'm building a bot" tells the present)."""
    if switch or ending or change or _HABIT.search(s):
        return False
    if _DAY_WORDS.search(s):
        return True
    if ko:  # "-어 놓았다 / -어 두었다" tells a state that results and holds ("실비보험 삼성화재로 들어놨어요")
        return any(t == "EP" and f in ("었", "았", "였", "었었", "았었") for f, t in morphs) \
            and not any(t == "VX" and f in ("놓", "두") for f, t in morphs)
    return _EN_PAST.search(s) is not None


_DENIED = {True: re.compile(r"(못|안|절대)\s*$"), False: re.compile(r"\b(can'?t|cannot|won'?t|never|not|wouldn'?t|couldn'?t)\s+(\w+\s+)?$", re.I)}
_SELF_NEGATING = re.compile(r"(anymore|any more|no longer|no more|더\s*이상)", re.I)


def _denied_ending(s: str, cues: dict) -> bool:
    """Every ending cue in ``s`` is denied: "유튜브 프리미엄은 절대 못 끊어", "I'd never
    quit climbing". ("anymore", "더 이상" carry their own negation and are never denied.)"""
    found = [m for m in cues["ending"].finditer(s) if not _SELF_NEGATING.match(m.group(0))]
    return bool(found) and all(_DENIED[cues is _KO].search(s[: m.start()]) for m in found) \
        and not any(_SELF_NEGATING.match(m.group(0)) for m in cues["ending"].finditer(s))


_EN_SELF = re.compile(r"\b(i|i'm|i've|i'd|i'll|im|ive|we|we're|we've|we'd|my|our)\b", re.I)
_EN_OTHER_OPENER = re.compile(r"^\W*(it|it's|its|this|that|that's|these|those|there|there's|the|he|he's|she|she's|they|they're|you|you're|you've|your|u|ur|his|her|their|everyone|everybody|people|nothing|something|life|nature)\b", re.I)


# an explicit replacement names the old value as the thing left behind:
# "switched to biking, the train got too crowded", "instead of", "X 말고", "X 대신", "X에서 Y로 바꿨어";
# a comparison names the other side: "likes it way better than samsung", "less crowded than planet fitness was"
_REPLACES = re.compile(r"\b(from|instead of|rather than|in place of|replac\w*|swapp?\w*|switch\w*|trad(ed|ing) in|overt(ook|aken|akes)|(\w+er|more \w+|less \w+) than)\b|대신|말고|에서\s*\S+\s*(으)?로|(으)?로\s*(바꿨|바꿔|바꿈|갈아|넘어)", re.I)
# "my gym moved ...", "our office got ...": a thing of the speaker's that does something
_EN_NOT_NOUN = r"(?:is|was|are|were|has|have|had|will|would|can|could|does|did|do|not|never|just|still)\b"
_EN_THING_DOES = re.compile(rf"^\W*(?:my|our)\s+(?:(?!{_EN_RELATION}\b|{_EN_NOT_NOUN})[a-z0-9'-]+\s+){{0,2}}?(?!{_EN_RELATION}\b|{_EN_NOT_NOUN})[a-z0-9'-]+"
                            r"\s+(?:just\s+|finally\s+|also\s+)?(?!(?:used|need|wanted|liked|loved|hated)\b)"
                            r"(?:\w+ed|got|went|came|took|made|ran|broke|shut|sold|left|began|became|fell|grew|rose|put|cut|raised)\b", re.I)
# "netflix raised the price again", "dr. lee's clinic moved": chat drops "my"; a thing named bare
# does something. The words before the verb must not be a verb, an adverb, a pronoun or a word
# for people (chat also drops "I": "got married", "finally quit", "sold the car", "kids started school"
# is not this); _EN_NOT_A_THING lists the common irregular verbs and such words
_EN_NOT_A_THING = ("go|goes|went|gone|get|gets|got|gotten|make|made|take|took|taken|come|came|run|ran|break|broke|buy|bought|"
                 "sell|sold|leave|left|quit|begin|began|become|became|fall|fell|grow|grew|rise|rose|put|cut|keep|kept|find|"
                 "found|give|gave|lose|lost|pay|paid|see|saw|tell|told|think|thought|feel|felt|have|had|do|did|say|said|eat|"
                 "ate|drink|drank|drive|drove|ride|rode|write|wrote|read|sleep|slept|spend|spent|win|won|meet|met|send|sent|"
                 "build|built|hit|let|set|sit|sat|stand|stood|teach|taught|catch|caught|bring|brought|hold|held|hear|heard|"
                 "wake|woke|wear|wore|swim|swam|throw|threw|fly|flew|forget|forgot|switch|move|start|stop|join|try|tried|"
                 "use|need|want|like|love|hate|live|work|play|moving|back|home|still|also|just|only|even|really|never|"
                 "always|now|then|today|tonight|yesterday|tomorrow|recently|lately|finally|again|since|after|before|when|"
                 "while|once|last|next|first|every|this|that|these|those|some|all|both|no|not|so|and|but|or|yes|yeah|ok|okay|"
                 "kids?|family|everyone|everybody|nobody|someone|somebody|new|old|"
                 "i|i'm|i’m|im|i've|ive|i'd|me|my|we|we're|we've|us|our|you|your|he|he's|she|she's|they|they're|it|it's|its")
_EN_BARE_THING_DOES = re.compile(
    rf"^\W*(?!(?:{_EN_NOT_A_THING}|{_EN_RELATION}|{_EN_NOT_NOUN})\b)(?![a-z'-]*(?:ed|ing|ly)\b)[a-z][a-z0-9'’.&-]*"
    rf"(?:\s+(?!(?:{_EN_NOT_A_THING}|{_EN_NOT_NOUN})\b)(?![a-z'-]*(?:ed|ing|ly)\b)[a-z0-9][a-z0-9'’.&-]*){{0,2}}?"
    r"\s+(?:just\s+|finally\s+|also\s+)?(?!(?:used|need|wanted|liked|loved|hated)\b)"
    r"(?:\w+ed|went|came|took|made|ran|broke|shut|sold|began|became|fell|grew|rose|cut)\b", re.I)


def _personal(s: str, ko: bool, subject: str | None, morphs: Sequence[tuple[str, str]] = (), ending: bool = False) -> bool:
    """Whose state the sentence tells. English marks the subject: "I/we/my ...",
    or none at all in chat ("switched to oat milk"), is the speaker; a named
    person is theirs; "It made me reflect", "You found your true self", "The
    event was great" tell of something or someone else, and so do a thing of
    the speaker's doing something ("my gym moved the squat racks upstairs",
    "헬스장이 가격 올렸어"): it changes the thing, not what the speaker does with
    it, unless it ends it ("my gym closed", "콩이 무지개다리 건넜어"), names
    the speaker ("my doctor took me off lexapro") or what was replaced
    ("의사쌤이 스틸녹스 대신 다른 약으로 처방해줬어")."""
    if subject is not None or _REPLACES.search(s):
        return True
    if ko:
        return ending or not ko_thing_does(morphs)
    thing = _EN_THING_DOES.match(s) or _EN_BARE_THING_DOES.match(s)
    if thing and not ending and not re.search(r"\b(me|i|my|myself)\b", re.split(r"[,.;!?]| and | but | so ", s[thing.end():])[0], re.I):
        return False
    opener = _EN_OTHER_OPENER.match(s)
    return opener is None or _EN_SELF.search(s[opener.end():].split(",")[0]) is not None


def _plan(s: str, ko: bool, morphs: Sequence[tuple[str, str]], cue: bool) -> bool:
    """Decided but not done. In Korean "려고" after a completed act is its
    purpose ("티빙도 가입했어, 야구 보려고": joined, to watch baseball), not a
    plan; at the end of a sentence of its own it is one ("당분간 좀 쉬려고")."""
    if ko and ko_mood(morphs) == "plan":
        return True
    if not cue:
        return False
    if ko and any(t == "EP" and f in ("었", "았", "였") for f, t in morphs) \
            and not re.search(r"(예정|계획|거야|거예요|다음 주|다음주|다음 달|다음달|내년|내일|곧)", s):
        return False
    return True


_CLAUSE = re.compile(r"[,.;!?…]+|\s(?:and|but|so|then)\s|(?<=[가-힣])(?:고|는데|지만|어서|아서|서)\s")


def _renewal(s: str, cues: dict, tokenizer) -> bool:
    """Some clause states the present positively, with a change cue and
    something of its own ("..., it's all pottery now"; not "so it's just me now")."""
    for clause in _CLAUSE.split(s):
        if clause and (cues["change"].search(clause) or cues["switch"].search(clause)) \
                and not cues["negation"].search(clause) and not cues["ending"].search(clause) \
                and any(not _generic(t) for t in tokenizer.tokens(clause)):
            return True
    return False


_VERB_DENIAL = {True: re.compile(r"(?<![가-힣])(안|못)\s*[가-힣]|않"),
                False: re.compile(r"\b(don'?t|doesn'?t|didn'?t|do not|does not|not|never|no longer|won'?t|can'?t|isn'?t|aren'?t|wasn'?t)\s+\w", re.I)}


# a clause that says what one does now, after what was ended: "..., taking a Japanese class", "..., freelancing now"
_EN_NOW_CLAUSE = re.compile(r"^\s*(?:(?:and|then|i'?m|i am|we'?re|now|just|currently|mostly|only)\s+){0,4}"
                            r"(?!going\b|gonna\b|trying\b|thinking\b|considering\b|looking\b|planning\b|hoping\b"
                            r"|\w*thing\b|morning\b|evening\b|during\b|spring\b|wedding\b|building\b|meeting\b|ceiling\b|ring\b|king\b)[a-z]+ing\b"
                            r"|\b(now|these days|instead)\s*$", re.I)


def _en_goes_on(s: str, cues: dict) -> bool:
    """A clause after the one that ends something says what holds now
    ("dropped German, taking a Japanese class"); not a reason ("sold the
    bike, too many close calls"), a past act or a denial."""
    clauses = [c for c in CLAUSE_BREAK.split(s) if c and c.strip()]
    at = next((i for i, c in enumerate(clauses) if cues["ending"].search(c)), None)
    if at is None:
        return False
    return any(_EN_NOW_CLAUSE.search(c) and not cues["negation"].search(c) and not cues["ending"].search(c)
               and not cues["plan"].search(c) and not cues["hypothetical"].search(c)
               for c in clauses[at + 1:])


# where one clause ends and the next begins, a reason staying with what it explains ("넘 멀어서 안 가요");
# ``updates`` reads the same clauses (what is said to stay, what is denied)
CLAUSE_BREAK = re.compile(r"[,.;!?…]+|\s(?:and|but|so|then|while)\s|(?<=[가-힣])(?:고|는데|지만)\s")


def _denials(s: str, ko: bool, cues: dict) -> tuple[str, ...]:
    """The clauses that deny a verb, without an ending cue of their own (a
    denied ending, "절대 못 끊어", restates)."""
    return tuple(c.strip().lower() for c in CLAUSE_BREAK.split(s)
                 if c and _VERB_DENIAL[ko].search(c) and not cues["ending"].search(c))


# "휴가 마지막이었어" (the holiday's end), "본 게 … 마지막이었어" (the last time one saw someone): not a thing given up
_KO_LAST_TIME = re.compile(r"(휴가|연휴|방학|시즌|학기|주말)\s*(의\s*)?마지막이었|(?<=[가-힣])\s(게|건)\s[^.,!?]{0,20}마지막이었")
_WHEN_BEGAN = re.compile(r"\bwhen (i|we) (first |initially )?(started|began|joined)\b(?! (at|with|as|in|on|a|an|the|my|our|to|working|going)\b)"
                         r"|\bwhen (i|we) first (started|began|joined|moved|got)\b|\bwhen (i|we) (moved|got) (here|there|in)\b", re.I)


def read(text: str, tokenizer) -> Reading:
    """How ``text`` is said (see ``Reading``)."""
    s = text.strip()
    s_bare = re.sub(r"[\s:;()\-^~!.*]*([:;][-']?[()DPp]|[\U0001F300-\U0001FAFF\u2600-\u27BF]+)[\s!.~]*$", "", s) or s  # a closing emoticon
    ko = _is_korean(s)
    cues = _KO if ko else _EN
    morphs = morphemes(tokenizer, s) if ko else ()

    # "when i first started", "when we moved here": the start of what holds, told as the past, changes nothing now
    s_cue = s if ko else _WHEN_BEGAN.sub(" ", s)

    def has(name: str) -> bool:
        if name in ("switch", "change", "shift"):
            return cues[name].search(s_cue) is not None
        return cues[name].search(s) is not None or (s_bare != s and cues[name].search(s_bare) is not None)

    kind = "fact"
    if not s:
        kind = "filler"
    elif has("question") and not (ko and ko_plain_polite(s, morphs)) or ko and "?" in s and ko_asks_last(morphs):
        kind = "question"
    elif has("greeting"):
        kind = "greeting"
    elif has("thanks") and len(s) < 40:
        kind = "thanks"
    elif has("filler") or (not ko and has("reaction")):
        kind = "filler"
    elif has("request"):
        kind = "request"
    elif not ko and has("small-talk") and not cues["first_person"].search(s):
        kind = "small-talk"  # "it's so gross out today": about no one
    elif has("hypothetical") or (ko and ko_mood(morphs) == "hypothetical"):
        kind = "hypothetical"
    subject = ko_subject(s, morphs) if ko else _en_subject(s)
    # the particle 도 on a noun adds a value ("바이올린도"); on an adverb it is "even" ("약 없이도 잘 자": even without)
    additive = has("additive") or (ko and any(f == "도" and t == "JX" and not (i and morphs[i - 1][1] == "MAG")
                                              for i, (f, t) in enumerate(morphs)))
    ending = has("ending") and not _denied_ending(s, cues)
    if ending and ko and _KO_LAST_TIME.search(s) and not cues["ending"].search(s.replace("마지막이었", "")):
        ending = False  # "어제가 휴가 마지막이었어", "민수 본 게 작년 여름이 마지막이었어": a holiday's end, the last meeting
    # a simple-past state with how long it lasted is over, unless the sentence ends it now
    # ("quit my job at the bank, worked there for six years" is an ending, not a past mention)
    past = has("past") or (not ko and has("over") and not ending) \
        or (ko and any(t == "EP" and f in ("었었", "았었") for f, t in morphs))
    ko_switch = ko and ko_switched(morphs)
    switch = has("switch") or ko_switch
    shift = has("shift") or (ko and ko_came_about(morphs))
    if kind == "fact" and ko and subject is None and not cues["first_person"].search(s) and not (switch or ending) \
            and any(t == "EF" and f in ("네", "구나", "군", "군요", "네요") for f, t in morphs[-3:]):
        kind = "small-talk"  # "벌써 12월이네": a remark about the world; "X로 갈아탔는데 훨 낫네" is someone's doing
    tokens = tokenizer.tokens(s)
    own = set(tokenizer.tokens(subject)) if subject else set()  # "민수" in every fact about 민수 says nothing
    content = frozenset(t for t in tokens if not _generic(t) and t not in own)
    if not content and ko:  # Kiwi can split a noun it does not know ("채식" -> 채/NNB 식/XSN): keep the words
        content = frozenset(w for w in re.findall(r"[가-힣]{2,}", s) if not _generic(w) and w not in own and not cues["negation"].search(w + " "))
    if ko:
        proper = {f.lower() for f, t in morphs if t in ("NNP", "SL")}
    else:  # capitalised words past the first (a sentence's first word is capitalised anyway)
        proper = {w.lower() for w in re.findall(r"(?<=[\s(\"'])([A-Z][A-Za-z0-9]+)", s[1:])} | set(re.findall(r"\b[A-Za-z]*\d+[A-Za-z0-9]*\b", s))
    # a name said to someone ("No doubts, Caroline.", "Hey Mel, ...") addresses them, it is not what the sentence is about
    vocative = {w.lower() for w in re.findall(r"(?:^|[,!.?]\s*)([A-Z][a-z]+)\s*[,!.?]|,\s*([A-Z][a-z]+)\s*$", s) for w in w if w}
    voc_tokens = {t for v in vocative for t in tokenizer.tokens(v)}
    content = frozenset(t for t in content if t not in voc_tokens)
    names = frozenset(t for t in content for p in proper for t2 in tokenizer.tokens(p) if t == t2)
    return Reading(text=s, kind=kind, names=names, subject=subject, personal=_personal(s, ko, subject, morphs, ending), negated=has("negation"), past=past, plan=_plan(s, ko, morphs, has("plan")),
                   change=has("change") or has("switch") or shift or ko_switch, switch=switch, episodic=_episodic(s, ko, morphs, switch, ending, has("change") or shift), renewal=_renewal(s, cues, tokenizer), replaces=_REPLACES.search(s) is not None, denials=_denials(s, ko, cues), ending=ending, additive=additive, still=has("still"),
                   predicate=_predicate(morphs, s), content=content, shift=shift,
                   goes_on=ko_goes_on(s, lambda t: morphemes(tokenizer, t)) if ko else ending and _en_goes_on(s, cues))


__all__ = ["CLAUSE_BREAK", "NON_FACT", "Reading", "read"]
