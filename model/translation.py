"""A small English ↔ 中文 grammar that writes sentence pairs by rule: the data of the en-zh and zh-en tasks.

A sentence is a :class:`Clause`: a subject (a pronoun, a name, or "the" + an optional adjective + a
noun), a verb in one of three tenses (past 吃了, present 吃, future 会吃), optionally negated
(没有吃 / 不吃 / 不会吃) or asked (…吗？), an object with a number and its measure word (两个苹果,
一只猫, 三本书) or "the", and an optional place and time. English puts place and time last; Chinese
puts the time after the subject and the place (在…) before the verb:

    the cat ate two apples in the garden yesterday .   ↔   猫昨天在花园里吃了两个苹果。

Both writings are deterministic and one-to-one, so every sentence has exactly one correct
translation and :func:`chinese_to_english` undoes :func:`english_to_chinese`. The one exception
is a :class:`PronounClause` (seed 001's example, en-zh only): "the cat did not cross the road
because it was too tired / too wide ." — the Chinese names what "it" is (因为猫太累了 / 因为马路太宽了),
decided by whether the adjective fits an animal or a thing.

English is written lower case with punctuation as separate words ("… garden yesterday ."), the
form :class:`~model.tokenizer.WordTokenizer` decodes to; Chinese has no spaces and ends in 。 or ？.
Everything is pure Python and drawn from a caller's ``random.Random``; nothing is downloaded.
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass

from model.tokenizer import CharTokenizer, WordTokenizer, split_words

# ------------------------------------------------------------------------------------------------
# lexicon
# ------------------------------------------------------------------------------------------------
TENSES = ("past", "present", "future")


@dataclass(frozen=True)
class Noun:
    """A noun: English singular and plural, Chinese word and measure word, and the kinds it belongs to."""

    en: str
    plural: str
    zh: str
    measure: str
    kinds: frozenset[str]
    container: str | None = None  # "cup of tea": en is "cup", container "of tea"

    def english(self, count: int) -> str:
        """The English words for ``count`` of it (0 means "the ...", singular)."""
        word = self.en if count <= 1 else self.plural
        return f"{word} {self.container}" if self.container else word


@dataclass(frozen=True)
class Verb:
    """A verb: English base, third-person singular and past forms, Chinese, and the noun kinds it takes."""

    base: str
    third: str
    past: str
    zh: str
    objects: frozenset[str]
    animals: bool  # an animal can be its subject


@dataclass(frozen=True)
class Adjective:
    en: str
    zh: str
    kinds: frozenset[str]  # the noun kinds it describes


def _nouns(kind: str, rows: str) -> list[Noun]:
    """Nouns from lines 'english plural 中文 measure [extra kinds]'."""
    out = []
    for line in rows.strip().splitlines():
        en, plural, zh, measure, *extra = line.split()
        out.append(Noun(en, plural, zh, measure, frozenset({kind, *extra})))
    return out


PEOPLE = _nouns("person", """
teacher teachers 老师 个
student students 学生 个
doctor doctors 医生 个
farmer farmers 农民 个
boy boys 男孩 个
girl girls 女孩 个
child children 孩子 个
man men 男人 个
woman women 女人 个
driver drivers 司机 个
chef chefs 厨师 个
nurse nurses 护士 个
worker workers 工人 个
""")
ANIMALS = _nouns("animal", """
cat cats 猫 只 catchable
dog dogs 狗 只
bird birds 鸟 只 catchable
horse horses 马 匹
rabbit rabbits 兔子 只 catchable
monkey monkeys 猴子 只
tiger tigers 老虎 只
duck ducks 鸭子 只 catchable
cow cows 牛 头
pig pigs 猪 头
sheep sheep 羊 只
chicken chickens 鸡 只 catchable
fish fish 鱼 条 catchable
""")
THINGS = [
    *_nouns("food", """
apple apples 苹果 个 fruit
orange oranges 橙子 个 fruit
egg eggs 鸡蛋 个 cookable
banana bananas 香蕉 根 fruit
cake cakes 蛋糕 块 makeable
cookie cookies 饼干 块 makeable
sandwich sandwiches 三明治 个 makeable
pear pears 梨 个 fruit
peach peaches 桃子 个 fruit
tomato tomatoes 西红柿 个 cookable
potato potatoes 土豆 个 cookable
"""),
    *_nouns("book", """
book books 书 本 openable
notebook notebooks 笔记本 本
dictionary dictionaries 词典 本
magazine magazines 杂志 本
"""),
    *_nouns("writing", """
letter letters 信 封 sendable
story stories 故事 个
poem poems 诗 首
"""),
    *_nouns("thing", """
pen pens 笔 支 losable
pencil pencils 铅笔 支 losable
bag bags 包 个 losable openable
box boxes 箱子 个 openable heavy
ball balls 球 个 kickable
chair chairs 椅子 把 heavy makeable fixable
table tables 桌子 张 heavy makeable fixable
picture pictures 画 张
map maps 地图 张 losable
ticket tickets 票 张 losable
umbrella umbrellas 伞 把 losable
key keys 钥匙 把 losable
cup cups 杯子 个 washable
kite kites 风筝 个 makeable
toy toys 玩具 个 makeable
gift gifts 礼物 个 sendable
computer computers 电脑 台 heavy fixable
phone phones 手机 部 losable fixable
watch watches 手表 块 losable fixable
window windows 窗户 扇 openable washable
door doors 门 扇 openable
"""),
    *_nouns("clothes", """
shirt shirts 衬衫 件 washable
coat coats 外套 件 washable
hat hats 帽子 顶 losable
"""),
    *_nouns("vehicle", """
car cars 车 辆 washable fixable
bike bikes 自行车 辆 washable fixable
"""),
    *_nouns("plant", """
flower flowers 花 朵
tree trees 树 棵
"""),
    *_nouns("crossable", """
road roads 马路 条
river rivers 河 条
bridge bridges 桥 座
"""),
]
CONTAINERS = [
    Noun("cup", "cups", "茶", "杯", frozenset({"drink"}), "of tea"),
    Noun("cup", "cups", "咖啡", "杯", frozenset({"drink"}), "of coffee"),
    Noun("cup", "cups", "牛奶", "杯", frozenset({"drink"}), "of milk"),
    Noun("bottle", "bottles", "水", "瓶", frozenset({"drink"}), "of water"),
    Noun("bottle", "bottles", "果汁", "瓶", frozenset({"drink"}), "of juice"),
    Noun("bowl", "bowls", "米饭", "碗", frozenset({"food", "cookable"}), "of rice"),
    Noun("bowl", "bowls", "汤", "碗", frozenset({"food", "cookable"}), "of soup"),
]
NAMES = {"tom": "汤姆", "mary": "玛丽", "jack": "杰克", "lucy": "露西", "lily": "莉莉", "mike": "迈克",
         "anna": "安娜", "peter": "彼得"}
PRONOUNS = {"i": "我", "you": "你", "he": "他", "she": "她", "we": "我们", "they": "他们"}
THIRD_PERSON = frozenset({"he", "she"})

_ANY_THING = {"food", "book", "writing", "thing", "clothes", "vehicle", "plant"}
VERBS = [
    Verb("eat", "eats", "ate", "吃", frozenset({"food"}), True),
    Verb("drink", "drinks", "drank", "喝", frozenset({"drink"}), True),
    Verb("buy", "buys", "bought", "买", frozenset({"food", "drink", "book", "thing", "clothes", "vehicle",
                                                   "plant", "animal"}), False),
    Verb("sell", "sells", "sold", "卖", frozenset({"food", "book", "thing", "clothes", "vehicle", "animal"}), False),
    Verb("see", "sees", "saw", "看见", frozenset({"animal", "person", "vehicle", "plant", "thing"}), True),
    Verb("find", "finds", "found", "找到", frozenset({"thing", "book", "animal", "clothes"}), True),
    Verb("draw", "draws", "drew", "画", frozenset({"animal", "plant", "vehicle", "fruit"}), False),
    Verb("write", "writes", "wrote", "写", frozenset({"writing"}), False),
    Verb("borrow", "borrows", "borrowed", "借", frozenset({"book", "losable"}), False),
    Verb("wash", "washes", "washed", "洗", frozenset({"washable", "fruit"}), False),
    Verb("carry", "carries", "carried", "搬", frozenset({"heavy"}), False),
    Verb("feed", "feeds", "fed", "喂", frozenset({"animal"}), False),
    Verb("catch", "catches", "caught", "抓", frozenset({"catchable"}), True),
    Verb("make", "makes", "made", "做", frozenset({"makeable"}), False),
    Verb("cook", "cooks", "cooked", "煮", frozenset({"cookable"}), False),
    Verb("open", "opens", "opened", "打开", frozenset({"openable"}), False),
    Verb("cross", "crosses", "crossed", "过", frozenset({"crossable"}), True),
    Verb("plant", "plants", "planted", "种", frozenset({"plant"}), False),
    Verb("lose", "loses", "lost", "丢", frozenset({"losable"}), False),
    Verb("send", "sends", "sent", "寄", frozenset({"sendable"}), False),
    Verb("kick", "kicks", "kicked", "踢", frozenset({"kickable"}), True),
    Verb("fix", "fixes", "fixed", "修", frozenset({"fixable"}), False),
]
ADJECTIVES = [
    Adjective("big", "大", frozenset({"animal", "food", "thing", "vehicle", "book", "plant"})),
    Adjective("small", "小", frozenset({"animal", "food", "thing", "vehicle", "book", "plant"})),
    Adjective("black", "黑", frozenset({"animal", "thing", "vehicle", "clothes"})),
    Adjective("white", "白", frozenset({"animal", "thing", "vehicle", "clothes", "plant"})),
    Adjective("red", "红", frozenset({"fruit", "thing", "vehicle", "clothes", "plant", "book"})),
    Adjective("new", "新", frozenset({"thing", "vehicle", "clothes", "book"})),
    Adjective("old", "旧", frozenset({"thing", "vehicle", "clothes", "book"})),
    Adjective("old", "老", frozenset({"person"})),
    Adjective("young", "年轻的", frozenset({"person"})),
    Adjective("tall", "高", frozenset({"person"})),
    Adjective("happy", "快乐的", frozenset({"person", "animal"})),
    Adjective("hungry", "饥饿的", frozenset({"animal"})),
]
NUMBERS = ("", "一", "两", "三", "四", "五", "六", "七", "八", "九", "十")
NUMBER_WORDS = ("", "a", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
PLACES = {
    "in the garden": "花园里", "in the kitchen": "厨房里", "in the park": "公园里", "at school": "学校",
    "at home": "家", "at the market": "市场", "in the library": "图书馆", "at the station": "车站",
    "in the classroom": "教室里", "on the farm": "农场", "by the river": "河边", "in the forest": "森林里",
    "at the zoo": "动物园", "in the city": "城里",
}
TIMES = {
    "past": {"yesterday": "昨天", "last night": "昨天晚上", "this morning": "今天早上", "last week": "上个星期",
             "last year": "去年"},
    "present": {"every day": "每天", "every morning": "每天早上", "every evening": "每天晚上",
                "every week": "每个星期", "often": "常常"},
    "future": {"tomorrow": "明天", "tonight": "今天晚上", "next week": "下个星期", "next year": "明年",
               "tomorrow morning": "明天早上"},
}

# -- the pronoun sentences (seed 001): "the cat did not cross the road because it was too tired"
PRONOUN_ANIMALS = ("cat", "dog", "horse", "rabbit", "monkey", "duck", "pig", "cow", "sheep", "chicken", "tiger")
ANIMATE_ADJECTIVES = {"tired": "累", "sleepy": "困", "lazy": "懒", "scared": "害怕", "weak": "虚弱"}
PRONOUN_FRAMES = (  # (verb, object): adjectives that fit the object, not the animal
    ("cross", "road", {"wide": "宽", "long": "长"}),
    ("cross", "river", {"wide": "宽", "deep": "深"}),
    ("cross", "bridge", {"long": "长", "narrow": "窄"}),
    ("carry", "box", {"heavy": "重", "big": "大"}),
    ("eat", "apple", {"sour": "酸", "hard": "硬"}),
    ("eat", "cake", {"sweet": "甜", "dry": "干"}),
    ("kick", "ball", {"heavy": "重", "hard": "硬"}),
)

_BY_EN = {n.en: n for n in PEOPLE + ANIMALS + THINGS}
_VERB_BY_BASE = {v.base: v for v in VERBS}
_SUBJECT_NOUNS = PEOPLE + ANIMALS[:-1]  # a fish does little on its own
_OBJECT_NOUNS = PEOPLE + ANIMALS + THINGS + CONTAINERS


# ------------------------------------------------------------------------------------------------
# sentences
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clause:
    """One ordinary sentence of the grammar, as structure (both writings are made from it)."""

    subject: str  # a pronoun, a name, or a noun's English word
    subject_adj: Adjective | None
    verb: Verb
    tense: str  # one of TENSES
    negative: bool
    question: bool
    obj: Noun
    count: int  # 0: "the ...", 1: "a/an ...", 2..10
    obj_adj: Adjective | None
    place: str | None  # a key of PLACES
    time: str | None  # a key of TIMES[tense]


@dataclass(frozen=True)
class PronounClause:
    """'the <animal> did not <verb> the <object> because it was too <adjective> .' (en-zh only)."""

    animal: str
    verb: str
    obj: str
    adjective: str

    @property
    def refers_to_animal(self) -> bool:
        """Whether "it" is the animal (the adjective fits an animal) rather than the object."""
        return self.adjective in ANIMATE_ADJECTIVES


def _third_person(clause: Clause) -> bool:
    return clause.subject in THIRD_PERSON or clause.subject not in PRONOUNS


def _article(next_word: str) -> str:
    return "an" if next_word[0] in "aeiou" else "a"


def _english_object(clause: Clause) -> list[str]:
    words = [clause.obj_adj.en] if clause.obj_adj else []
    words += clause.obj.english(clause.count).split()
    if clause.count == 0:
        return ["the", *words]
    if clause.count == 1:
        return [_article(words[0]), *words]
    return [NUMBER_WORDS[clause.count], *words]


def _english_subject(clause: Clause) -> list[str]:
    if clause.subject in PRONOUNS or clause.subject in NAMES:
        return [clause.subject]
    return ["the", *([clause.subject_adj.en] if clause.subject_adj else []), clause.subject]


def english(clause: Clause | PronounClause) -> str:
    """The English writing: lower case, words and punctuation separated by single spaces."""
    if isinstance(clause, PronounClause):
        return (f"the {clause.animal} did not {clause.verb} the {clause.obj} because it was too "
                f"{clause.adjective} .")
    verb, third = clause.verb, _third_person(clause)
    subject = _english_subject(clause)
    if clause.question:
        aux = {"past": "did", "present": "does" if third else "do", "future": "will"}[clause.tense]
        head = [aux, *subject, verb.base]
    elif clause.negative:
        aux = {"past": "did", "present": "does" if third else "do", "future": "will"}[clause.tense]
        head = [*subject, aux, "not", verb.base]
    else:
        form = {"past": verb.past, "present": verb.third if third else verb.base}.get(clause.tense)
        head = [*subject, form] if form else [*subject, "will", verb.base]
    tail = [*(clause.place.split() if clause.place else []), *(clause.time.split() if clause.time else [])]
    return " ".join([*head, *_english_object(clause), *tail, "?" if clause.question else "."])


def _chinese_noun(noun: str, adj: Adjective | None) -> str:
    return (adj.zh if adj else "") + noun


def chinese(clause: Clause | PronounClause) -> str:
    """The Chinese writing: time after the subject, 在+place before the verb, 了/没有/不/会 for aspect."""
    if isinstance(clause, PronounClause):
        animal, obj = _BY_EN[clause.animal].zh, _BY_EN[clause.obj].zh
        verb = _VERB_BY_BASE[clause.verb].zh
        if clause.refers_to_animal:
            referent, adjective = animal, ANIMATE_ADJECTIVES[clause.adjective]
        else:
            referent, adjective = obj, dict(_frame(clause.verb, clause.obj)[2])[clause.adjective]
        return f"{animal}没有{verb}{obj}，因为{referent}太{adjective}了。"
    if clause.subject in PRONOUNS:
        subject = PRONOUNS[clause.subject]
    elif clause.subject in NAMES:
        subject = NAMES[clause.subject]
    else:
        subject = _chinese_noun(_BY_EN[clause.subject].zh, clause.subject_adj)
    time = TIMES[clause.tense][clause.time] if clause.time else ""
    aux = {("past", True): "没有", ("present", True): "不", ("future", True): "不会",
           ("future", False): "会"}.get((clause.tense, clause.negative), "")
    place = "在" + PLACES[clause.place] if clause.place else ""
    aspect = "了" if clause.tense == "past" and not clause.negative else ""
    count = NUMBERS[clause.count] + clause.obj.measure if clause.count else ""
    obj = count + _chinese_noun(clause.obj.zh, clause.obj_adj)
    end = "吗？" if clause.question else "。"
    return f"{subject}{time}{aux}{place}{clause.verb.zh}{aspect}{obj}{end}"


def _frame(verb: str, obj: str) -> tuple[str, str, dict[str, str]]:
    return next(f for f in PRONOUN_FRAMES if f[0] == verb and f[1] == obj)


# ------------------------------------------------------------------------------------------------
# sampling
# ------------------------------------------------------------------------------------------------
PRONOUN_SHARE = 0.15  # of the en-zh pairs


def _fits(adj: Adjective, noun: Noun) -> bool:
    return bool(adj.kinds & noun.kinds) and not noun.container


def _maybe_adjective(rng: random.Random, noun: Noun, chance: float) -> Adjective | None:
    choices = [a for a in ADJECTIVES if _fits(a, noun)]
    return rng.choice(choices) if choices and rng.random() < chance else None


def sample_clause(rng: random.Random) -> Clause:
    """One ordinary sentence, every choice drawn from ``rng``."""
    roll = rng.random()
    subject_adj = None
    if roll < 0.3:
        subject, animal = rng.choice(sorted(PRONOUNS)), False
    elif roll < 0.45:
        subject, animal = rng.choice(sorted(NAMES)), False
    else:
        noun = rng.choice(_SUBJECT_NOUNS)
        subject, animal = noun.en, "animal" in noun.kinds
        subject_adj = _maybe_adjective(rng, noun, 0.4)
    verbs = [v for v in VERBS if v.animals] if animal else VERBS
    verb = rng.choice(verbs)
    obj = rng.choice([n for n in _OBJECT_NOUNS if n.kinds & verb.objects])
    count = rng.choice((0, 1, 1, *range(2, 11)))
    if obj.container and count == 0:
        count = 1
    tense = rng.choice(TENSES)
    negative = rng.random() < 0.3
    question = not negative and rng.random() < 0.25
    return Clause(
        subject=subject, subject_adj=subject_adj, verb=verb, tense=tense, negative=negative, question=question,
        obj=obj, count=count, obj_adj=_maybe_adjective(rng, obj, 0.3),
        place=rng.choice(sorted(PLACES)) if rng.random() < 0.5 else None,
        time=rng.choice(sorted(TIMES[tense])) if rng.random() < 0.6 else None,
    )


def sample_pronoun_clause(rng: random.Random) -> PronounClause:
    """One "… because it was too …" sentence; "it" is the animal or the object half the time each."""
    verb, obj, thing_adjectives = rng.choice(PRONOUN_FRAMES)
    pool = ANIMATE_ADJECTIVES if rng.random() < 0.5 else thing_adjectives
    return PronounClause(rng.choice(PRONOUN_ANIMALS), verb, obj, rng.choice(sorted(pool)))


def sample_en_zh(rng: random.Random) -> tuple[str, str]:
    """An (English, Chinese) pair; :data:`PRONOUN_SHARE` of them are pronoun sentences."""
    clause = sample_pronoun_clause(rng) if rng.random() < PRONOUN_SHARE else sample_clause(rng)
    return english(clause), chinese(clause)


def sample_zh_en(rng: random.Random) -> tuple[str, str]:
    """A (Chinese, English) pair; never a pronoun sentence (their Chinese cannot be turned back)."""
    clause = sample_clause(rng)
    return chinese(clause), english(clause)


# ------------------------------------------------------------------------------------------------
# reading typed sentences back
# ------------------------------------------------------------------------------------------------
def normalize_english(text: str) -> str:
    """Lower case, punctuation split off as its own word, single spaces: the form the tasks write."""
    return " ".join(split_words(text))


def normalize_chinese(text: str) -> str:
    """Spaces dropped and the ASCII ``,?.`` written as Chinese ``，？。``."""
    table = str.maketrans({",": "，", "?": "？", ".": "。"})
    return "".join(text.split()).translate(table)


def _alternation(options: Iterable[str]) -> str:
    return "|".join(re.escape(o) for o in sorted(set(options), key=len, reverse=True))


def _adjective_lookup(lang: str) -> dict[str, list[Adjective]]:
    table: dict[str, list[Adjective]] = {}
    for adj in ADJECTIVES:
        table.setdefault(getattr(adj, lang), []).append(adj)
    return table


_ADJ_EN, _ADJ_ZH = _adjective_lookup("en"), _adjective_lookup("zh")
_NOUN_WORDS_EN = [n.en for n in _OBJECT_NOUNS if not n.container] + [n.plural for n in _OBJECT_NOUNS
                                                                     if not n.container]
_CONTAINER_EN = [f"{n.en} {n.container}" for n in CONTAINERS] + [f"{n.plural} {n.container}" for n in CONTAINERS]
_VERB_FORMS = {form: v for v in VERBS for form in (v.base, v.third, v.past)}
_TIME_EN = {k: (tense, k) for tense, table in TIMES.items() for k in table}
_TIME_ZH = {zh: (tense, k) for tense, table in TIMES.items() for k, zh in table.items()}
_PLACE_ZH = {zh: en for en, zh in PLACES.items()}

_ENGLISH = re.compile(
    rf"^(?:(?P<aux>did|does|do|will) )?"
    rf"(?P<subj>{_alternation([*PRONOUNS, *NAMES])}|the (?:(?P<sadj>{_alternation(_ADJ_EN)}) )?"
    rf"(?P<snoun>{_alternation(n.en for n in _SUBJECT_NOUNS)}))"
    rf"(?: (?P<neg_aux>did|does|do|will) not)?(?: (?P<will>will))?"
    rf" (?P<verb>{_alternation(_VERB_FORMS)})"
    rf" (?P<det>the|an|a|{_alternation(NUMBER_WORDS[2:])})(?: (?P<oadj>{_alternation(_ADJ_EN)}))?"
    rf" (?P<onoun>{_alternation([*_CONTAINER_EN, *_NOUN_WORDS_EN])})"
    rf"(?: (?P<place>{_alternation(PLACES)}))?(?: (?P<time>{_alternation(_TIME_EN)}))?"
    rf" (?P<end>[.?])$"
)
_PRONOUN_EN = re.compile(
    rf"^the (?P<animal>{_alternation(PRONOUN_ANIMALS)}) did not (?P<verb>{_alternation(f[0] for f in PRONOUN_FRAMES)})"
    rf" the (?P<obj>{_alternation(f[1] for f in PRONOUN_FRAMES)}) because it was too (?P<adj>[a-z]+) \.$"
)
_NOUN_ZH = _alternation(n.zh for n in _OBJECT_NOUNS)
_CHINESE = re.compile(
    rf"^(?P<subj>{_alternation([*PRONOUNS.values(), *NAMES.values()])}|(?P<sadj>{_alternation(_ADJ_ZH)})?"
    rf"(?P<snoun>{_alternation(n.zh for n in _SUBJECT_NOUNS)}))"
    rf"(?P<time>{_alternation(_TIME_ZH)})?(?P<aux>没有|不会|会|不)?(?:在(?P<place>{_alternation(_PLACE_ZH)}))?"
    rf"(?P<verb>{_alternation(v.zh for v in VERBS)})(?P<le>了)?"
    rf"(?:(?P<num>{_alternation(NUMBERS[1:])})(?P<measure>{_alternation(n.measure for n in _OBJECT_NOUNS)}))?"
    rf"(?P<oadj>{_alternation(_ADJ_ZH)})?(?P<onoun>{_NOUN_ZH})(?P<end>。|吗？)$"
)


def _pick_adjective(options: list[Adjective] | None, noun: Noun) -> Adjective | None:
    """The one adjective of ``options`` (same written form) that fits ``noun``; None if none fits."""
    fitting = [a for a in options or [] if a.kinds & noun.kinds]
    return fitting[0] if fitting else None


def _english_object_noun(words: str) -> Noun | None:
    for noun in _OBJECT_NOUNS:
        for form in (noun.en, noun.plural):
            if (f"{form} {noun.container}" if noun.container else form) == words:
                return noun
    return None


def _clause_from_english(m: re.Match) -> Clause | None:
    """The clause a loose English match describes (None where a piece does not fit); checked by rewriting."""
    verb = _VERB_FORMS[m["verb"]]
    aux = m["aux"] or m["neg_aux"] or m["will"]
    if m["aux"]:
        tense = {"did": "past", "does": "present", "do": "present", "will": "future"}[m["aux"]]
    elif aux:
        tense = {"did": "past", "does": "present", "do": "present", "will": "future"}[aux]
    else:
        tense = "past" if m["verb"] == verb.past else "present"
    subject = m["snoun"] or m["subj"]
    subject_adj = None
    if m["sadj"]:
        subject_adj = _pick_adjective(_ADJ_EN.get(m["sadj"]), _BY_EN[subject])
        if subject_adj is None:
            return None
    obj = _english_object_noun(m["onoun"])
    if obj is None:
        return None
    det = m["det"]
    count = 0 if det == "the" else 1 if det in ("a", "an") else NUMBER_WORDS.index(det)
    obj_adj = None
    if m["oadj"]:
        obj_adj = _pick_adjective(_ADJ_EN.get(m["oadj"]), obj)
        if obj_adj is None or obj.container:
            return None
    time = m["time"]
    if time and _TIME_EN[time][0] != tense:
        return None
    return Clause(subject=subject, subject_adj=subject_adj, verb=verb, tense=tense,
                  negative=bool(m["neg_aux"]), question=bool(m["aux"]), obj=obj, count=count, obj_adj=obj_adj,
                  place=m["place"], time=time)


def _clause_from_chinese(m: re.Match) -> Clause | None:
    """The clause a loose Chinese match describes (None where a piece does not fit); checked by rewriting."""
    aux, le = m["aux"], bool(m["le"])
    if aux in ("会", "不会"):
        tense = "future"
    elif aux == "没有" or le:
        tense = "past"
    else:
        tense = "present"
    time = None
    if m["time"]:
        time_tense, time = _TIME_ZH[m["time"]]
        if time_tense != tense:
            return None
    subject, subject_adj = m["subj"], None
    if m["snoun"]:
        noun = next(n for n in _SUBJECT_NOUNS if n.zh == m["snoun"])
        subject = noun.en
        if m["sadj"]:
            subject_adj = _pick_adjective(_ADJ_ZH.get(m["sadj"]), noun)
            if subject_adj is None:
                return None
    else:
        subject = next(k for table in (PRONOUNS, NAMES) for k, v in table.items() if v == subject)
    measure = m["measure"]
    candidates = [n for n in _OBJECT_NOUNS if n.zh == m["onoun"] and (measure is None or n.measure == measure)]
    if len(candidates) != 1:
        return None
    obj = candidates[0]
    count = NUMBERS.index(m["num"]) if m["num"] else 0
    obj_adj = _pick_adjective(_ADJ_ZH.get(m["oadj"]), obj) if m["oadj"] else None
    if m["oadj"] and obj_adj is None:
        return None
    verb = next(v for v in VERBS if v.zh == m["verb"])
    return Clause(subject=subject, subject_adj=subject_adj, verb=verb, tense=tense,
                  negative=aux in ("没有", "不", "不会"), question=m["end"] == "吗？", obj=obj, count=count,
                  obj_adj=obj_adj, place=_PLACE_ZH[m["place"]] if m["place"] else None, time=time)


def _pronoun_from_english(m: re.Match) -> PronounClause | None:
    frames = [f for f in PRONOUN_FRAMES if f[0] == m["verb"] and f[1] == m["obj"]]
    if not frames or (m["adj"] not in ANIMATE_ADJECTIVES and m["adj"] not in frames[0][2]):
        return None
    return PronounClause(m["animal"], m["verb"], m["obj"], m["adj"])


def parse_english(text: str) -> Clause | PronounClause | None:
    """The sentence ``text`` is (any case, punctuation spacing free), or None if the grammar cannot write it."""
    if not isinstance(text, str):
        return None
    normal = normalize_english(text)
    m = _PRONOUN_EN.match(normal)
    clause = _pronoun_from_english(m) if m else None
    if clause is None:
        m = _ENGLISH.match(normal)
        clause = _clause_from_english(m) if m else None
    return clause if clause is not None and english(clause) == normal else None


def parse_chinese(text: str) -> Clause | None:
    """The ordinary sentence ``text`` is (spaces ignored), or None if the zh-en grammar cannot write it."""
    if not isinstance(text, str):
        return None
    normal = normalize_chinese(text)
    m = _CHINESE.match(normal)
    clause = _clause_from_chinese(m) if m else None
    return clause if clause is not None and chinese(clause) == normal else None


def english_to_chinese(text: str) -> str | None:
    """The Chinese translation of a sentence the grammar can write, else None."""
    clause = parse_english(text)
    return None if clause is None else chinese(clause)


def chinese_to_english(text: str) -> str | None:
    """The English translation of an ordinary (non-pronoun) sentence the grammar can write, else None."""
    clause = parse_chinese(text)
    return None if clause is None else english(clause)


# ------------------------------------------------------------------------------------------------
# vocabularies and lengths
# ------------------------------------------------------------------------------------------------
def _all_english_words() -> set[str]:
    words = {*PRONOUNS, *NAMES, "the", "a", "an", "did", "does", "do", "will", "not", ".", "?",
             "because", "it", "was", "too", *NUMBER_WORDS[2:], *ANIMATE_ADJECTIVES}
    for noun in _OBJECT_NOUNS:
        words |= {*noun.english(1).split(), *noun.english(2).split()}
    for verb in VERBS:
        words |= {verb.base, verb.third, verb.past}
    for adj in ADJECTIVES:
        words.add(adj.en)
    for phrase in [*PLACES, *_TIME_EN]:
        words |= set(phrase.split())
    for _, _, adjectives in PRONOUN_FRAMES:
        words |= set(adjectives)
    return words


def _all_chinese_characters() -> set[str]:
    chars = set("没有不会在了吗？。，因为太")
    texts = [*PRONOUNS.values(), *NAMES.values(), *NUMBERS, *PLACES.values(), *_TIME_ZH,
             *ANIMATE_ADJECTIVES.values()]
    texts += [n.zh + n.measure for n in _OBJECT_NOUNS] + [v.zh for v in VERBS] + [a.zh for a in ADJECTIVES]
    texts += [zh for _, _, adjectives in PRONOUN_FRAMES for zh in adjectives.values()]
    for text in texts:
        chars |= set(text)
    return chars


ENGLISH_WORDS: tuple[str, ...] = tuple(sorted(_all_english_words()))
CHINESE_CHARACTERS: str = "".join(sorted(_all_chinese_characters()))


def _longest(texts: Iterable[str], measure) -> int:
    return max(measure(t) for t in texts)


def _word_count(text: str) -> int:
    return len(text.split())


def _english_bound() -> int:
    """Words in the longest English sentence the grammar can write (a safe upper bound)."""
    words = _word_count
    subject = max(1, 2 + _longest((a.en for a in ADJECTIVES), words))
    head = 1 + subject + 2 + 1  # aux / subject / "did not" / verb
    obj = 1 + 1 + _longest([*_NOUN_WORDS_EN, *_CONTAINER_EN], words)
    ordinary = head + obj + _longest(PLACES, words) + _longest(_TIME_EN, words) + 1
    return max(ordinary, _longest((english(PronounClause(a, v, o, "tired")) for a in PRONOUN_ANIMALS
                                   for v, o, _ in PRONOUN_FRAMES), words))


def _chinese_bound() -> int:
    """Characters in the longest Chinese sentence the grammar can write (a safe upper bound)."""
    adj = _longest((a.zh for a in ADJECTIVES), len)
    subject = max(_longest([*PRONOUNS.values(), *NAMES.values()], len),
                  adj + _longest((n.zh for n in _SUBJECT_NOUNS), len))
    middle = _longest(_TIME_ZH, len) + 2 + 1 + _longest(PLACES.values(), len) + _longest((v.zh for v in VERBS), len)
    obj = 1 + 1 + 2 + adj + _longest((n.zh for n in _OBJECT_NOUNS), len)
    pronoun = max(len(chinese(PronounClause(a, v, o, adj_en))) for a in PRONOUN_ANIMALS
                  for v, o, adjs in PRONOUN_FRAMES for adj_en in [*ANIMATE_ADJECTIVES, *adjs])
    return max(subject + middle + obj + 2, pronoun)


MAX_ENGLISH_WORDS = _english_bound()
MAX_CHINESE_CHARS = _chinese_bound()


def english_tokenizer() -> WordTokenizer:
    """The English side's tokenizer: one token per word of :data:`ENGLISH_WORDS`."""
    return WordTokenizer(ENGLISH_WORDS)


def chinese_tokenizer() -> CharTokenizer:
    """The Chinese side's tokenizer: one token per character of :data:`CHINESE_CHARACTERS`."""
    return CharTokenizer(CHINESE_CHARACTERS)


# ------------------------------------------------------------------------------------------------
# word alignment: which source tokens each target token translates, from the construction itself
# ------------------------------------------------------------------------------------------------
# Both writings are built again piece by piece, every piece tagged with the part of the clause it
# writes ("subj", "verb", "place", ...). A Chinese character and an English word are aligned when
# they share a tag. Pieces that write nothing of the other language ("the", "of", "was", "，") have no
# tag. A phrase of the phrase table (a place, a time) is one piece: every character of 在花园里 goes
# with every word of "in the garden". The tense is written by the verb ("ate" ↔ 吃 + 了) or by the
# auxiliary ("will" ↔ 会, "did not" ↔ 没有), the question by the auxiliary in front and "?" (↔ 吗).
Tagged = list[tuple[str, frozenset[str]]]  # (one token, its tags)


def _tags(*names: str) -> frozenset[str]:
    return frozenset(names)


def _chars(text: str, *tags: str) -> Tagged:
    """Every character of ``text`` (a Chinese piece), each with ``tags``."""
    return [(ch, _tags(*tags)) for ch in text]


def _tagged_english_object(clause: Clause) -> Tagged:
    words: Tagged = [(clause.obj_adj.en, _tags("oadj"))] if clause.obj_adj else []
    noun = clause.obj.english(clause.count).split()
    if clause.obj.container:  # "cup of tea": the cup is the measure word (杯), "of" writes nothing
        words += [(noun[0], _tags("measure")), (noun[1], _tags()), (noun[2], _tags("obj"))]
    else:
        words += [(noun[0], _tags("obj"))]
    if clause.count == 0:
        return [("the", _tags()), *words]
    det = _article(words[0][0]) if clause.count == 1 else NUMBER_WORDS[clause.count]
    return [(det, _tags("num")), *words]


def _tagged_english(clause: Clause) -> Tagged:
    """:func:`english` of an ordinary clause, word by word, each word with its tags."""
    verb, third = clause.verb, _third_person(clause)
    if clause.subject in PRONOUNS or clause.subject in NAMES:
        subject: Tagged = [(clause.subject, _tags("subj"))]
    else:
        subject = [("the", _tags()), *([(clause.subject_adj.en, _tags("sadj"))] if clause.subject_adj else []),
                   (clause.subject, _tags("subj"))]
    aux = {"past": "did", "present": "does" if third else "do", "future": "will"}[clause.tense]
    if clause.question:
        tense = {"past": ("past",), "future": ("future",)}.get(clause.tense, ())
        head = [(aux, _tags("q", *tense)), *subject, (verb.base, _tags("verb"))]
    elif clause.negative:
        head = [*subject, (aux, _tags("neg")), ("not", _tags("neg")), (verb.base, _tags("verb"))]
    elif clause.tense == "future":
        head = [*subject, ("will", _tags("future")), (verb.base, _tags("verb"))]
    elif clause.tense == "past":
        head = [*subject, (verb.past, _tags("verb", "past"))]
    else:
        head = [*subject, (verb.third if third else verb.base, _tags("verb"))]
    tail = [(w, _tags("place")) for w in (clause.place or "").split()]
    tail += [(w, _tags("time")) for w in (clause.time or "").split()]
    end = ("?", _tags("end", "q")) if clause.question else (".", _tags("end"))
    return [*head, *_tagged_english_object(clause), *tail, end]


def _tagged_chinese(clause: Clause) -> Tagged:
    """:func:`chinese` of an ordinary clause, character by character, each with its tags."""
    if clause.subject in PRONOUNS:
        subject = _chars(PRONOUNS[clause.subject], "subj")
    elif clause.subject in NAMES:
        subject = _chars(NAMES[clause.subject], "subj")
    else:
        subject = _chars(clause.subject_adj.zh if clause.subject_adj else "", "sadj")
        subject += _chars(_BY_EN[clause.subject].zh, "subj")
    time = _chars(TIMES[clause.tense][clause.time] if clause.time else "", "time")
    if clause.negative:
        aux = _chars({"past": "没有", "present": "不", "future": "不会"}[clause.tense], "neg")
    else:
        aux = _chars("会" if clause.tense == "future" else "", "future")
    place = _chars("在" + PLACES[clause.place] if clause.place else "", "place")
    aspect = _chars("了" if clause.tense == "past" and not clause.negative else "", "past")
    count: Tagged = []
    if clause.count:
        count = _chars(NUMBERS[clause.count], "num") + _chars(clause.obj.measure,
                                                               "measure" if clause.obj.container else "num")
    obj = count + _chars(clause.obj_adj.zh if clause.obj_adj else "", "oadj") + _chars(clause.obj.zh, "obj")
    end = [*_chars("吗", "q"), *_chars("？", "end")] if clause.question else _chars("。", "end")
    return [*subject, *time, *aux, *place, *_chars(clause.verb.zh, "verb"), *aspect, *obj, *end]


def _tagged_pronoun(clause: PronounClause) -> tuple[Tagged, Tagged]:
    """(English, Chinese) of a pronoun sentence, tagged: the referent after 因为 translates "it", 太…了 "too"."""
    frame = dict(_frame(clause.verb, clause.obj)[2])
    referent = _BY_EN[clause.animal].zh if clause.refers_to_animal else _BY_EN[clause.obj].zh
    adjective = ANIMATE_ADJECTIVES[clause.adjective] if clause.refers_to_animal else frame[clause.adjective]
    en = [("the", _tags()), (clause.animal, _tags("subj")), ("did", _tags("neg")), ("not", _tags("neg")),
          (clause.verb, _tags("verb")), ("the", _tags()), (clause.obj, _tags("obj")),
          ("because", _tags("because")), ("it", _tags("it")), ("was", _tags()), ("too", _tags("too")),
          (clause.adjective, _tags("adj")), (".", _tags("end"))]
    zh = [*_chars(_BY_EN[clause.animal].zh, "subj"), *_chars("没有", "neg"),
          *_chars(_VERB_BY_BASE[clause.verb].zh, "verb"), *_chars(_BY_EN[clause.obj].zh, "obj"), *_chars("，"),
          *_chars("因为", "because"), *_chars(referent, "it"), *_chars("太", "too"), *_chars(adjective, "adj"),
          *_chars("了", "too"), *_chars("。", "end")]
    return en, zh


@dataclass(frozen=True)
class WordAlignment:
    """Which source tokens each target token translates, for one sentence pair of the grammar.

    ``source`` and ``target`` are the tokens of each side as the tasks' tokenizers cut them (English
    words, Chinese characters), without ``<bos>``/``<eos>``. ``links[j]`` lists the positions in
    ``source`` that ``target[j]`` translates, in order: empty for a token that translates nothing
    ("the", "of", "，"), several for a phrase (each character of 在花园里 ↔ in, the, garden).
    """

    source: tuple[str, ...]
    target: tuple[str, ...]
    links: tuple[tuple[int, ...], ...]


def word_alignment(clause: Clause | PronounClause, direction: str = "en-zh") -> WordAlignment:
    """The alignment of ``clause``'s two writings, from English to Chinese (``"en-zh"``) or back (``"zh-en"``)."""
    if direction not in ("en-zh", "zh-en"):
        raise ValueError(f"The direction must be 'en-zh' or 'zh-en', got {direction!r}.")
    if isinstance(clause, PronounClause):
        en, zh = _tagged_pronoun(clause)
    else:
        en, zh = _tagged_english(clause), _tagged_chinese(clause)
    source, target = (en, zh) if direction == "en-zh" else (zh, en)
    links = tuple(tuple(i for i, (_, tags) in enumerate(source) if tags & wanted) for _, wanted in target)
    return WordAlignment(tuple(tok for tok, _ in source), tuple(tok for tok, _ in target), links)


def alignment_of(source: str, direction: str) -> WordAlignment | None:
    """The alignment of a typed ``source`` sentence with its translation (``direction`` "en-zh" or "zh-en"),
    found by reading the sentence back into the grammar; None when the grammar cannot write it."""
    clause = parse_english(source) if direction == "en-zh" else parse_chinese(source)
    return None if clause is None else word_alignment(clause, direction)
