#!/usr/bin/env python3
"""Deterministic generator for the embedded demo world (films, people, studios,
places, awards).

Stdlib only.  Run from anywhere:

    python3 data/demo/build_world.py

It rewrites passages.jsonl, entities.jsonl, triples.jsonl and questions.jsonl
next to this file and runs a set of consistency checks (every fact used by a
question must be stated in the gold passages, every passage has 2-6 sentences,
and so on).  All prose below was written for this project; the facts are
public knowledge.
"""
from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

OUT_DIR = Path(__file__).resolve().parent

# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


def pick(key: str, n: int) -> int:
    """Stable pseudo-random choice used to vary sentence templates."""
    return int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16) % n


def art(word: str) -> str:
    w = word.lower()
    if w.startswith(("honest", "hour")):
        return "an"
    if w[:1] in "aeiou" and not w.startswith(("uni", "euro", "one", "use")):
        return "an"
    return "a"


def join_and(items) -> str:
    items = list(items)
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    return ", ".join(items[:-1]) + f" and {items[-1]}"


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def split_blurb(b: str):
    return [s.strip() for s in b.split(" | ") if s.strip()] if b else []


# ---------------------------------------------------------------------------
# countries
# ---------------------------------------------------------------------------
# id: (name, adjective, takes "the", aliases, capital city id or None, blurb)
COUNTRIES = {
    "us": ("United States", "American", True, ["USA", "United States of America", "U.S.", "US", "America"], "washington_dc",
           "It is a federal republic of fifty states in North America. | Its commercial film industry has been centred on Hollywood, a district of Los Angeles, since the 1910s."),
    "uk": ("United Kingdom", "British", True, ["UK", "Britain", "Great Britain", "U.K."], "london",
           "It is made up of England, Scotland, Wales and Northern Ireland. | Much of its film production is based in and around London, near studios such as Pinewood and Shepperton."),
    "ca": ("Canada", "Canadian", False, [], None,
           "It is the second-largest country in the world by area, and its capital is Ottawa."),
    "mx": ("Mexico", "Mexican", False, [], "mexico_city",
           "Its filmmakers, among them Alfonso Cuarón, Alejandro González Iñárritu and Guillermo del Toro, won the Academy Award for Best Director five times between 2014 and 2019."),
    "es": ("Spain", "Spanish", False, [], None,
           "It occupies most of the Iberian Peninsula in southwestern Europe, and its capital is Madrid."),
    "fr": ("France", "French", False, [], "paris",
           "The Lumière brothers presented their Cinématographe there in 1895, and the country hosts the Cannes Film Festival every year."),
    "de": ("Germany", "German", False, [], "berlin",
           "Its film tradition ranges from the Expressionist silent films of the 1920s to the New German Cinema of the 1970s."),
    "it": ("Italy", "Italian", False, [], "rome",
           "In film history it is known for postwar Neorealism and for the spaghetti westerns of the 1960s."),
    "jp": ("Japan", "Japanese", False, [], "tokyo",
           "It is an island country in East Asia with one of the world's largest film and animation industries."),
    "kr": ("South Korea", "South Korean", False, ["Korea", "Republic of Korea"], "seoul",
           "It occupies the southern half of the Korean Peninsula, and its films drew wide international attention from the early 2000s."),
    "cn": ("China", "Chinese", False, ["People's Republic of China"], "beijing",
           "It is a large country in East Asia with one of the world's biggest cinema markets."),
    "tw": ("Taiwan", "Taiwanese", False, [], None,
           "It is an island in East Asia whose directors, such as Ang Lee and Hou Hsiao-hsien, have won major international prizes."),
    "in": ("India", "Indian", False, [], None,
           "It produces more feature films each year than any other country, in languages including Hindi, Bengali, Tamil and Telugu."),
    "se": ("Sweden", "Swedish", False, [], "stockholm",
           "It is a Nordic country whose cinema is closely associated with the director Ingmar Bergman."),
    "is": ("Iceland", "Icelandic", False, [], "reykjavik",
           "It is a Nordic island country in the North Atlantic Ocean."),
    "at": ("Austria", "Austrian", False, [], "vienna",
           "It is a landlocked country in central Europe with a long musical tradition."),
    "hu": ("Hungary", "Hungarian", False, [], "budapest",
           "It is a landlocked country in central Europe."),
    "ro": ("Romania", "Romanian", False, [], None,
           "It is a country in southeastern Europe, and its capital is Bucharest."),
    "ru": ("Russia", "Russian", False, [], None,
           "It is the largest country in the world by area, stretching from Eastern Europe across northern Asia."),
    "au": ("Australia", "Australian", False, [], None,
           "It is both a country and a continent in the Southern Hemisphere, and its capital is Canberra."),
    "nz": ("New Zealand", "New Zealand", False, [], "wellington",
           "It is an island country in the southwestern Pacific Ocean whose landscapes stood in for Middle-earth in Peter Jackson's Tolkien films."),
    "my": ("Malaysia", "Malaysian", False, [], None,
           "It is a country in Southeast Asia, and its capital is Kuala Lumpur."),
    "tn": ("Tunisia", "Tunisian", False, [], "tunis",
           "It is the northernmost country in Africa."),
    "ma": ("Morocco", "Moroccan", False, [], None,
           "It is a country in North Africa, and its capital is Rabat."),
    "gt": ("Guatemala", "Guatemalan", False, [], "guatemala_city",
           "It is a country in Central America."),
    "ie": ("Ireland", "Irish", False, ["Republic of Ireland"], None,
           "It occupies most of the island of Ireland in northwestern Europe, and its capital is Dublin."),
    "no": ("Norway", "Norwegian", False, [], None,
           "It is a Nordic country on the Scandinavian Peninsula, and its far north lies above the Arctic Circle, where the summer sun never sets."),
    "gr": ("Greece", "Greek", False, [], None,
           "It is a country in southeastern Europe, and its capital is Athens."),
    "ar": ("Argentina", "Argentine", False, [], None,
           "It is a country in South America, and its capital is Buenos Aires."),
    "ch": ("Switzerland", "Swiss", False, [], None,
           "It is a landlocked country in central Europe."),
    "nl": ("Netherlands", "Dutch", True, ["Holland"], None,
           "It is a country in northwestern Europe."),
    "dk": ("Denmark", "Danish", False, [], None,
           "It is a Nordic country in northern Europe."),
    "ke": ("Kenya", "Kenyan", False, [], None,
           "It is a country in East Africa, and its capital is Nairobi."),
}


def cname(cid: str, the: bool = True) -> str:
    name, _, takes_the, *_ = COUNTRIES[cid]
    return ("the " + name) if (takes_the and the) else name


def cadj(cid: str) -> str:
    return COUNTRIES[cid][1]


# ---------------------------------------------------------------------------
# cities and places
# ---------------------------------------------------------------------------
CITIES = {}


def C(cid, name, country, region=None, blurb="", ptitle=None, aliases=(), kind="city", within=None):
    CITIES[cid] = dict(id=cid, name=name, country=country, region=region, blurb=blurb,
                       ptitle=ptitle or name, aliases=list(aliases), kind=kind, within=within)


# United States
C("burbank", "Burbank", "us", "Los Angeles County, California",
  "It sits at the eastern end of the San Fernando Valley and calls itself the Media Capital of the World because so many entertainment companies are based there.")
C("los_angeles", "Los Angeles", "us", "California",
  "It is the largest city in California. | Its Hollywood district became the symbolic home of the American film industry early in the twentieth century.",
  aliases=["LA", "L.A."])
C("universal_city", "Universal City", "us", "Los Angeles County, California",
  "It is an unincorporated area built around the Universal Studios lot and theme park.", kind="community")
C("culver_city", "Culver City", "us", "Los Angeles County, California",
  "It has hosted film studios since the 1910s, and the old Metro-Goldwyn-Mayer lot there is now Sony Pictures Studios.")
C("beverly_hills", "Beverly Hills", "us", "Los Angeles County, California",
  "This wealthy city is almost entirely surrounded by Los Angeles and is famous for the shops of Rodeo Drive.")
C("santa_monica", "Santa Monica", "us", "Los Angeles County, California",
  "It is a beach city on the Pacific coast west of downtown Los Angeles, known for its pier.")
C("emeryville", "Emeryville", "us", "Alameda County, California",
  "It is a small city on the eastern shore of San Francisco Bay, squeezed between Oakland and Berkeley.")
C("glendale_ca", "Glendale", "us", "Los Angeles County, California",
  "It lies north of downtown Los Angeles, next to Burbank.", ptitle="Glendale, California")
C("san_francisco", "San Francisco", "us", "California",
  "It sits at the northern tip of a peninsula between the Pacific Ocean and San Francisco Bay. | The Presidio, a former army post in the city, now houses the Letterman Digital Arts Center.")
C("los_gatos", "Los Gatos", "us", "Santa Clara County, California",
  "It is a town in the foothills of the Santa Cruz Mountains at the southwestern edge of Silicon Valley.", kind="town")
C("new_york_city", "New York City", "us", "New York State",
  "It is the most populous city in the United States. | It is made up of five boroughs: Manhattan, Brooklyn, Queens, the Bronx and Staten Island.",
  aliases=["New York", "NYC", "New York, New York"])
C("cincinnati", "Cincinnati", "us", "Ohio",
  "It lies on the north bank of the Ohio River in the southwestern corner of the state.")
C("modesto", "Modesto", "us", "California",
  "It is a city in California's Central Valley, and the teenage cruising scene of its streets in the early 1960s inspired American Graffiti.")
C("san_carlos", "San Carlos", "us", "San Mateo County, California",
  "It is a suburban city on the San Francisco Peninsula.", ptitle="San Carlos, California")
C("missoula", "Missoula", "us", "Montana",
  "It is a college town in western Montana and the home of the University of Montana.")
C("detroit", "Detroit", "us", "Michigan",
  "Long known as the Motor City, it grew into the centre of the American automobile industry.")
C("minneapolis", "Minneapolis", "us", "Minnesota",
  "It is the largest city in Minnesota and forms the Twin Cities together with neighbouring Saint Paul.")
C("knoxville", "Knoxville", "us", "Tennessee",
  "It lies on the Tennessee River in the eastern part of the state.")
C("houston", "Houston", "us", "Texas",
  "It is the most populous city in Texas and the home of NASA's Johnson Space Center.")
C("providence", "Providence", "us", "Rhode Island",
  "It is the capital of Rhode Island and the home of Brown University.")
C("miami", "Miami", "us", "Florida",
  "It is a major city in southern Florida. | Barry Jenkins set and filmed Moonlight in its Liberty City neighbourhood.")
C("sacramento", "Sacramento", "us", "California",
  "It is the capital of California, and Greta Gerwig set her film Lady Bird there.")
C("louisville", "Louisville", "us", "Kentucky",
  "It is the largest city in Kentucky and hosts the Kentucky Derby horse race every spring.")
C("chicago", "Chicago", "us", "Illinois",
  "It is the largest city in Illinois, on the southwestern shore of Lake Michigan.")
C("floral_park", "Floral Park", "us", "New York State",
  "It is a village on Long Island, just east of the New York City borough of Queens.", kind="village")
C("kalispell", "Kalispell", "us", "Montana",
  "It is a city in northwestern Montana, not far from Glacier National Park.")
C("bloomington_mn", "Bloomington", "us", "Minnesota",
  "It is a suburb of Minneapolis and the home of the Mall of America.", ptitle="Bloomington, Minnesota")
C("oakland", "Oakland", "us", "California",
  "It sits on the eastern side of San Francisco Bay, facing San Francisco.")
C("uvalde", "Uvalde", "us", "Texas",
  "It is a small city in southwest Texas.")
C("boston", "Boston", "us", "Massachusetts",
  "It is the capital of Massachusetts and one of the oldest cities in the United States.")
C("lincoln_ne", "Lincoln", "us", "Nebraska",
  "It is the capital of Nebraska and the home of the University of Nebraska.", ptitle="Lincoln, Nebraska")
C("cambridge_ma", "Cambridge", "us", "Massachusetts",
  "It lies across the Charles River from Boston and is home to Harvard University and the Massachusetts Institute of Technology.",
  ptitle="Cambridge, Massachusetts")
C("syracuse_ny", "Syracuse", "us", "New York State",
  "It is a city in central New York State and the home of Syracuse University.", ptitle="Syracuse, New York")
C("omaha", "Omaha", "us", "Nebraska",
  "It is the largest city in Nebraska, on the west bank of the Missouri River.")
C("pittsburgh", "Pittsburgh", "us", "Pennsylvania",
  "It grew up where the Allegheny and Monongahela rivers meet to form the Ohio River.")
C("concord_ca", "Concord", "us", "California",
  "It is a city in the East Bay region of the San Francisco Bay Area.", ptitle="Concord, California")
C("yakima", "Yakima", "us", "Washington State",
  "It is a city in central Washington known for its apple orchards and hop farms.")
C("dayton", "Dayton", "us", "Ohio",
  "The Wright brothers ran their bicycle shop there while developing their first aeroplanes.")
C("arlington_va", "Arlington", "us", "Virginia",
  "Lying across the Potomac River from Washington, D.C., it is the site of the Pentagon and Arlington National Cemetery.",
  ptitle="Arlington, Virginia")
C("lexington_ky", "Lexington", "us", "Kentucky",
  "It is known as the Horse Capital of the World because of the many thoroughbred farms around it.", ptitle="Lexington, Kentucky")
C("scottsdale", "Scottsdale", "us", "Arizona",
  "It lies just east of Phoenix in the Sonoran Desert.")
C("gibson_city", "Gibson City", "us", "Illinois",
  "It is a small town in the farmland of central Illinois.", kind="town")
C("cedar_rapids", "Cedar Rapids", "us", "Iowa",
  "It is the second-largest city in Iowa.")
C("roswell", "Roswell", "us", "New Mexico",
  "It became famous after a 1947 incident that inspired decades of stories about crashed flying saucers.", ptitle="Roswell, New Mexico")
C("englewood", "Englewood", "us", "New Jersey",
  "It is a small city in Bergen County, near the George Washington Bridge.", ptitle="Englewood, New Jersey")
C("washington_dc", "Washington, D.C.", "us", None,
  "It is the capital of the United States and the seat of its federal government.", aliases=["Washington", "Washington DC"])
C("shawnee", "Shawnee", "us", "Oklahoma",
  "It is a city in central Oklahoma.", ptitle="Shawnee, Oklahoma")
C("springfield_ma", "Springfield", "us", "Massachusetts",
  "It stands on the Connecticut River and is known as the birthplace of basketball, which was invented there in 1891.",
  ptitle="Springfield, Massachusetts")
C("springfield_mo", "Springfield", "us", "Missouri",
  "It is the third-largest city in Missouri, in the Ozarks region, and is a different city from Springfield, Massachusetts.",
  ptitle="Springfield, Missouri")
C("newark", "Newark", "us", "New Jersey",
  "It is the largest city in New Jersey.", ptitle="Newark, New Jersey")
C("indiana_pa", "Indiana", "us", "Pennsylvania",
  "Despite its name, this small town lies in western Pennsylvania rather than in the state of Indiana.",
  ptitle="Indiana, Pennsylvania", kind="town")
C("merced", "Merced", "us", "California",
  "It is a city in California's Central Valley that serves as a gateway to Yosemite National Park.")
C("marshalltown", "Marshalltown", "us", "Iowa",
  "It is a small city in central Iowa.")
C("philadelphia", "Philadelphia", "us", "Pennsylvania",
  "The Declaration of Independence was signed there in 1776.")
C("denver", "Denver", "us", "Colorado",
  "The capital of Colorado sits one mile above sea level, which earned it the nickname Mile High City.")
C("winona", "Winona", "us", "Minnesota",
  "It is a river town on the Mississippi in southeastern Minnesota, and the actor Winona Ryder was named after it.",
  ptitle="Winona, Minnesota")
C("baltimore", "Baltimore", "us", "Maryland",
  "It is a port city on Chesapeake Bay. | Guillermo del Toro set The Shape of Water in a government laboratory there during the Cold War.")
C("grand_island", "Grand Island", "us", "Nebraska",
  "It is a city on the Platte River in central Nebraska.", ptitle="Grand Island, Nebraska")
C("san_juan_pr", "San Juan", "us", "Puerto Rico",
  "It is the capital of Puerto Rico, a Caribbean territory of the United States.", ptitle="San Juan, Puerto Rico")
C("paris_texas", "Paris", "us", "Texas",
  "It is a small city in northeast Texas. | It lends its name to Wim Wenders's 1984 film Paris, Texas, in which the town is a place the main character dreams about rather than a setting.",
  ptitle="Paris, Texas")
C("fargo_nd", "Fargo", "us", "North Dakota",
  "It is the largest city in North Dakota, on the Red River opposite Moorhead, Minnesota. | The Coen brothers named their film Fargo after it, although most of that story unfolds in Minnesota.",
  ptitle="Fargo, North Dakota")
C("atlanta", "Atlanta", "us", "Georgia",
  "It is the capital of the US state of Georgia.")
C("concord_ma", "Concord", "us", "Massachusetts",
  "Some of the first battles of the American Revolutionary War were fought there and in nearby Lexington in 1775. | It is a different place from Concord, California.",
  ptitle="Concord, Massachusetts", kind="town")
C("reading_pa", "Reading", "us", "Pennsylvania",
  "It is a city in southeastern Pennsylvania that gave its name to the Reading Railroad, one of the railways on the Monopoly board.",
  ptitle="Reading, Pennsylvania")

# United Kingdom and Ireland
C("london", "London", "uk", "England",
  "It is the capital of both England and the United Kingdom and stands on the River Thames.")
C("london_on", "London", "ca", "Ontario",
  "It is a city in southwestern Ontario that was named after the British capital and even has its own River Thames. | It is a different city from London, England.",
  ptitle="London, Ontario")
C("south_shields", "South Shields", "uk", "Tyne and Wear, England",
  "It is a coastal town at the mouth of the River Tyne in northeast England.", kind="town")
C("haverfordwest", "Haverfordwest", "uk", "Pembrokeshire, Wales",
  "It is the county town of Pembrokeshire in southwest Wales.", kind="town")
C("reading_uk", "Reading", "uk", "Berkshire, England",
  "It is a large town on the River Thames, west of London.", ptitle="Reading, Berkshire", kind="town")
C("ipswich", "Ipswich", "uk", "Suffolk, England",
  "It is the county town of Suffolk in East Anglia.", kind="town")
C("oxford", "Oxford", "uk", "Oxfordshire, England",
  "It is home to the University of Oxford, the oldest university in the English-speaking world.")
C("burnley", "Burnley", "uk", "Lancashire, England",
  "It is a town that grew with the cotton mills of the Industrial Revolution.", kind="town")
C("dorking", "Dorking", "uk", "Surrey, England",
  "It is a market town south of London, at the foot of the North Downs.", kind="town")
C("preston", "Preston", "uk", "Lancashire, England",
  "It is a city on the River Ribble in northwest England.")
C("ely", "Ely", "uk", "Cambridgeshire, England",
  "It is a small cathedral city in the Fens of East Anglia.")
C("cambridge_uk", "Cambridge", "uk", "Cambridgeshire, England",
  "It is the home of the University of Cambridge, founded in 1209. | It is a different place from Cambridge, Massachusetts.",
  ptitle="Cambridge, England")
C("torquay", "Torquay", "uk", "Devon, England",
  "It is a seaside resort town on the English Riviera in Devon.", kind="town")
C("bristol", "Bristol", "uk", "England",
  "It is a port city in southwest England, and the animation studio Aardman is based there.")
C("perth_au", "Perth", "au", "Western Australia",
  "It is the capital of the state of Western Australia, on the Swan River.", ptitle="Perth, Western Australia")
C("perth_scotland", "Perth", "uk", "Scotland",
  "It is a city on the River Tay in central Scotland that was once a royal capital of the Scottish kingdom. | It is a different city from Perth in Western Australia.",
  ptitle="Perth, Scotland")
C("belfast", "Belfast", "uk", "Northern Ireland",
  "It is the capital of Northern Ireland. | The RMS Titanic was built in its Harland and Wolff shipyard.")
C("ballymena", "Ballymena", "uk", "County Antrim, Northern Ireland",
  "It is a town in County Antrim, Northern Ireland.", kind="town")
C("omagh", "Omagh", "uk", "County Tyrone, Northern Ireland",
  "It is the county town of County Tyrone in Northern Ireland.", kind="town")
C("cork", "Cork", "ie", "County Cork",
  "It is the second-largest city in the Republic of Ireland, on the River Lee.")

# Canada, Australia, New Zealand
C("kapuskasing", "Kapuskasing", "ca", "Ontario",
  "It is a small town in northern Ontario.", kind="town")
C("toronto", "Toronto", "ca", "Ontario",
  "It is the largest city in Canada and hosts the Toronto International Film Festival every September.")
C("becancour", "Bécancour", "ca", "Quebec",
  "It is a city on the south shore of the St. Lawrence River, across from Trois-Rivières.", aliases=["Becancour"])
C("halifax", "Halifax", "ca", "Nova Scotia",
  "It is the capital of Nova Scotia. | Many victims of the Titanic sinking are buried in its cemeteries.", ptitle="Halifax, Nova Scotia")
C("sydney_au", "Sydney", "au", "New South Wales",
  "It is Australia's largest city, famous for its Opera House and Harbour Bridge.")
C("sydney_ns", "Sydney", "ca", "Nova Scotia",
  "It is a community on Cape Breton Island in Nova Scotia. | It shares its name with the much larger Australian city.",
  ptitle="Sydney, Nova Scotia", kind="community")
C("melbourne", "Melbourne", "au", "Victoria",
  "It is the capital of the Australian state of Victoria.")
C("dalby", "Dalby", "au", "Queensland",
  "It is a rural town on the Darling Downs in Queensland.", kind="town")
C("wellington", "Wellington", "nz", None,
  "It is the capital of New Zealand, at the southern tip of the North Island.")

# Mexico, Central America, Spain
C("mexico_city", "Mexico City", "mx", None,
  "It is the capital of Mexico and one of the largest cities in the Americas. | Its Colonia Roma neighbourhood gave Alfonso Cuarón's film Roma its title.")
C("guadalajara_mx", "Guadalajara", "mx", "Jalisco",
  "It is the capital of the state of Jalisco and one of Mexico's largest cities, often described as the home of mariachi music.")
C("guadalajara_es", "Guadalajara", "es", "Castilla-La Mancha",
  "It is a city in central Spain, northeast of Madrid. | The much larger Mexican city of Guadalajara was named after it.",
  ptitle="Guadalajara, Spain")
C("las_palmas", "Las Palmas de Gran Canaria", "es", "Canary Islands",
  "It is the largest city of the Canary Islands, on the island of Gran Canaria.", aliases=["Las Palmas"])
C("guatemala_city", "Guatemala City", "gt", None,
  "It is the capital and largest city of Guatemala.")

# France, Germany, Italy, central Europe
C("paris", "Paris", "fr", None,
  "It is the capital of France. | In December 1895 the Lumière brothers held one of the first public film screenings there.")
C("cannes", "Cannes", "fr", "French Riviera",
  "It is a resort town on the Mediterranean coast that hosts the Cannes Film Festival every May.")
C("frankfurt", "Frankfurt am Main", "de", "Hesse",
  "It is Germany's financial centre and the seat of the European Central Bank.", aliases=["Frankfurt"])
C("frankfurt_oder", "Frankfurt (Oder)", "de", "Brandenburg",
  "It is a town on the Oder River, which forms the border with Poland. | It is a different city from Frankfurt am Main.",
  kind="town")
C("dusseldorf", "Düsseldorf", "de", "North Rhine-Westphalia",
  "It is the capital of the state of North Rhine-Westphalia, on the River Rhine.", aliases=["Dusseldorf"])
C("munich", "Munich", "de", "Bavaria",
  "It is the capital of Bavaria and the home of the Oktoberfest.")
C("berlin", "Berlin", "de", None,
  "It is the capital of Germany and hosts the Berlin International Film Festival every February.")
C("idar_oberstein", "Idar-Oberstein", "de", "Rhineland-Palatinate",
  "It is a town known for its gemstone-cutting industry.", kind="town")
C("rome", "Rome", "it", None,
  "It is the capital of Italy. | The large Cinecittà film studios opened on its outskirts in 1937.")
C("milan", "Milan", "it", "Lombardy",
  "It is the capital of Lombardy and the home of the La Scala opera house.")
C("rimini", "Rimini", "it", "Emilia-Romagna",
  "It is a seaside resort on the Adriatic coast, and Federico Fellini drew on his childhood there for Amarcord.")
C("venice", "Venice", "it", "Veneto",
  "It is built on a lagoon of small islands linked by canals. | It hosts the Venice Film Festival, the oldest film festival in the world.")
C("vicenza", "Vicenza", "it", "Veneto",
  "It is famous for buildings by the Renaissance architect Andrea Palladio.")
C("syracuse_it", "Syracuse", "it", "Sicily",
  "It is an ancient city on the southeast coast of Sicily, founded by Greek colonists in the eighth century BC. | It is a different place from Syracuse, New York.",
  ptitle="Syracuse, Sicily")
C("vienna", "Vienna", "at", None,
  "It is the capital of Austria, long celebrated as a city of music.")
C("thal", "Thal", "at", "Styria",
  "It is a small village near Graz in the Austrian state of Styria.", kind="village")
C("budapest", "Budapest", "hu", None,
  "It is the capital of Hungary, divided by the River Danube into Buda and Pest.")
C("craiova", "Craiova", "ro", "Oltenia",
  "It is the largest city in the historical region of Oltenia in southwestern Romania.")
C("vladivostok", "Vladivostok", "ru", "Primorsky Krai",
  "It is a Pacific port city at the eastern end of the Trans-Siberian Railway.")

# Asia
C("tokyo", "Tokyo", "jp", None,
  "It is the capital of Japan and one of the largest metropolitan areas in the world.")
C("koganei", "Koganei", "jp", "Tokyo Metropolis",
  "It is a city in the western part of Tokyo Metropolis, and Studio Ghibli's offices and animation studio are located there.",
  within="tokyo")
C("nakano_nagano", "Nakano", "jp", "Nagano Prefecture",
  "It is a small city in the north of Nagano Prefecture, in the mountains of central Japan. | It is a different place from the Nakano ward of Tokyo.",
  ptitle="Nakano, Nagano")
C("nakano_tokyo", "Nakano", "jp", "Tokyo Metropolis",
  "It is one of the twenty-three special wards of Tokyo, known for the Nakano Broadway shopping complex.",
  ptitle="Nakano, Tokyo", kind="ward", within="tokyo")
C("seoul", "Seoul", "kr", None,
  "It is the capital of South Korea, divided by the Han River.")
C("daegu", "Daegu", "kr", None,
  "It is one of South Korea's largest cities, in the southeast of the country.")
C("gimhae", "Gimhae", "kr", "South Gyeongsang Province",
  "It is a city near Busan in the southeast of the country.")
C("shanghai", "Shanghai", "cn", None,
  "It is China's largest city and a major port at the mouth of the Yangtze River.")
C("beijing", "Beijing", "cn", None,
  "It is the capital of China.")
C("qingdao", "Qingdao", "cn", "Shandong Province",
  "It is a port city on the Yellow Sea known for its Tsingtao beer.")
C("hong_kong", "Hong Kong", "cn", None,
  "It is a special administrative region of China and was long the centre of Cantonese-language cinema.")
C("pingtung", "Pingtung County", "tw", None,
  "It is a county at the southern tip of Taiwan.", kind="county")
C("kolkata", "Kolkata", "in", "West Bengal",
  "It is the capital of West Bengal and the centre of Bengali-language filmmaking.", aliases=["Calcutta"])
C("varanasi", "Varanasi", "in", "Uttar Pradesh",
  "It is one of the holiest cities in Hinduism, on the banks of the Ganges.", aliases=["Benares", "Banaras"])
C("ipoh", "Ipoh", "my", "Perak",
  "It is the capital of the Malaysian state of Perak.")

# Nordic countries
C("uppsala", "Uppsala", "se", None,
  "It is a university city north of Stockholm, and its university was founded in 1477.")
C("stockholm", "Stockholm", "se", None,
  "It is the capital of Sweden, built on islands where Lake Mälaren meets the Baltic Sea.")
C("gothenburg", "Gothenburg", "se", None,
  "It is Sweden's second-largest city and its busiest port, on the west coast.", aliases=["Göteborg"])
C("linkoping", "Linköping", "se", "Östergötland",
  "It is a university city in southern Sweden known for its aircraft industry.", aliases=["Linkoping"])
C("lund", "Lund", "se", "Scania",
  "It is an old university town in southern Sweden.")
C("malmo", "Malmö", "se", "Scania",
  "It is Sweden's third-largest city and is linked to Copenhagen by the Øresund Bridge.", aliases=["Malmo"])
C("reykjavik", "Reykjavík", "is", None,
  "It is the capital of Iceland and the northernmost capital of a sovereign state.", aliases=["Reykjavik"])

# Africa
C("tunis", "Tunis", "tn", None, "It is the capital of Tunisia.")
C("casablanca", "Casablanca", "ma", None,
  "It is the largest city in Morocco. | It gave its name to the 1942 Warner Bros. film, which was shot almost entirely on studio sets in California.")

# ---------------------------------------------------------------------------
# studios and other organisations
# ---------------------------------------------------------------------------
STUDIOS = {}


def S(sid, name, country, founded=None, hq=None, blurb="", aliases=(), founders=(), parent=None, kind="film studio", ptitle=None):
    STUDIOS[sid] = dict(id=sid, name=name, country=country, founded=founded, hq=hq, blurb=blurb,
                        aliases=list(aliases), founders=list(founders), parent=parent, kind=kind,
                        ptitle=ptitle or name)


S("warner_bros", "Warner Bros.", "us", 1923, "burbank",
  "It was founded by four brothers, Harry, Albert, Sam and Jack Warner. | Its 1927 release The Jazz Singer helped begin the era of talking pictures.",
  aliases=["Warner Bros. Pictures", "Warner Brothers", "WB"])
S("universal_pictures", "Universal Pictures", "us", 1912, "universal_city",
  "Founded by Carl Laemmle, it is one of the oldest surviving film studios in the United States.", aliases=["Universal"])
S("paramount_pictures", "Paramount Pictures", "us", 1912, "los_angeles",
  "Its lot on Melrose Avenue is the last of the major studios still located in Hollywood itself.", aliases=["Paramount"])
S("twentieth_century_fox", "20th Century Fox", "us", 1935, "los_angeles",
  "It was formed by the merger of Fox Film Corporation and Twentieth Century Pictures. | Disney acquired it in 2019 and renamed it 20th Century Studios the following year.",
  aliases=["Twentieth Century Fox", "20th Century Studios", "Fox"])
S("fox_searchlight", "Fox Searchlight Pictures", "us", 1994, "los_angeles",
  "It was set up as a specialty division of 20th Century Fox for smaller, independent-minded films and is now called Searchlight Pictures. | Despite the similar name, its releases were handled separately from the main 20th Century Fox slate.",
  aliases=["Searchlight Pictures", "Fox Searchlight"])
S("columbia_pictures", "Columbia Pictures", "us", 1918, "culver_city",
  "It began as the CBC Film Sales Corporation and took the Columbia name in 1924. | Sony has owned it since 1989.",
  aliases=["Columbia"])
S("sony_pictures_classics", "Sony Pictures Classics", "us", 1992, None,
  "It is the arthouse and foreign-language distribution arm of Sony Pictures.")
S("walt_disney_pictures", "Walt Disney Pictures", "us", 1983, "burbank",
  "It is the banner under which the Walt Disney Studios releases its family films, including those made by Pixar. | Walt Disney had founded the original Disney studio with his brother Roy in 1923.",
  aliases=["Disney"])
S("touchstone_pictures", "Touchstone Pictures", "us", 1984, "burbank",
  "Disney created the label to release films aimed at older audiences than its family pictures.", aliases=["Touchstone"])
S("pixar", "Pixar Animation Studios", "us", 1986, "emeryville",
  "It grew out of the computer graphics division of Lucasfilm and was spun off in 1986 with funding from Steve Jobs. | The Walt Disney Company bought it in 2006.",
  aliases=["Pixar"], kind="animation studio")
S("dreamworks_pictures", "DreamWorks Pictures", "us", 1994, "universal_city",
  "Steven Spielberg founded it together with Jeffrey Katzenberg and David Geffen.", aliases=["DreamWorks", "DreamWorks SKG"],
  founders=["steven_spielberg"])
S("dreamworks_animation", "DreamWorks Animation", "us", None, "glendale_ca",
  "It began as the animation division of DreamWorks Pictures and became a separate company in 2004. | Despite the shared name, it has been a different company from DreamWorks Pictures since then, and Comcast, Universal's parent company, bought it in 2016.",
  aliases=["DreamWorks Animation SKG"], kind="animation studio")
S("studio_ghibli", "Studio Ghibli", "jp", 1985, "koganei",
  "Its name comes from an Italian word for a hot Saharan wind, chosen by Hayao Miyazaki. | It is famous for hand-drawn animated features.",
  aliases=["Ghibli", "Studio Ghibli Inc."], founders=["hayao_miyazaki", "isao_takahata", "toshio_suzuki"], kind="animation studio")
S("studio_ponoc", "Studio Ponoc", "jp", 2015, None,
  "It was set up by the former Studio Ghibli producer Yoshiaki Nishimura, and its name comes from a Croatian word for midnight. | Despite employing several former Ghibli artists, it is a separate company from Studio Ghibli.",
  aliases=["Ponoc"], kind="animation studio")
S("topcraft", "Topcraft", "jp", 1972, None,
  "Many of its animators went on to join Studio Ghibli after it closed in 1985.", kind="animation studio")
S("toho", "Toho", "jp", 1932, "tokyo",
  "It is best known abroad for Godzilla, the giant monster it introduced in 1954.", aliases=["Toho Co., Ltd."])
S("toei", "Toei Company", "jp", None, "tokyo",
  "Despite the similar-sounding name, it is a different company from Toho. | Its subsidiary Toei Animation produced television series such as Dragon Ball and Sailor Moon.",
  aliases=["Toei"])
S("daiei", "Daiei Film", "jp", 1942, "tokyo",
  "It was one of the major Japanese studios of the 1950s.", aliases=["Daiei"])
S("new_line_cinema", "New Line Cinema", "us", 1967, None,
  "Robert Shaye founded it in New York City as a distributor of art films and cult titles. | It became part of Warner Bros. in 2008.",
  aliases=["New Line"], parent="warner_bros")
S("legendary", "Legendary Pictures", "us", 2000, "burbank",
  "Founded by Thomas Tull, it co-finances and co-produces big-budget films, often together with Warner Bros.",
  aliases=["Legendary Entertainment", "Legendary"])
S("miramax", "Miramax", "us", 1979, None,
  "Brothers Bob and Harvey Weinstein founded it and named it after their parents, Miriam and Max. | It was the leading American independent distributor of the 1990s.",
  aliases=["Miramax Films"])
S("weinstein_company", "The Weinstein Company", "us", 2005, None,
  "Bob and Harvey Weinstein set it up after leaving Miramax, the company they had founded in 1979. | It is a different company from Miramax despite their shared founders.",
  aliases=["Weinstein Company"])
S("lionsgate", "Lionsgate", "us", 1997, "santa_monica",
  "It was founded in Vancouver, Canada, before moving its headquarters to California.", aliases=["Lionsgate Films", "Lions Gate"])
S("a24", "A24", "us", 2012, "new_york_city",
  "It quickly became known for distinctive independent films and has released several Academy Award winners.")
S("focus_features", "Focus Features", "us", 2002, None,
  "It is the specialty film label of Universal Pictures.", aliases=["Focus"], parent="universal_pictures")
S("mgm", "Metro-Goldwyn-Mayer", "us", 1924, None,
  "Its films open with Leo the roaring lion. | For decades its studio lot was in Culver City, California, and Amazon bought the company in 2022.",
  aliases=["MGM"])
S("lucasfilm", "Lucasfilm", "us", 1971, "san_francisco",
  "George Lucas founded it, and the Walt Disney Company bought it in 2012. | Its offices are in the Letterman Digital Arts Center in the Presidio.",
  aliases=["Lucasfilm Ltd."], founders=["george_lucas"], kind="production company")
S("american_zoetrope", "American Zoetrope", "us", 1969, "san_francisco",
  "Francis Ford Coppola and George Lucas founded it as an independent alternative to the Hollywood studios.",
  aliases=["Zoetrope"], founders=["francis_ford_coppola", "george_lucas"], kind="production company")
S("netflix", "Netflix", "us", 1997, "los_gatos",
  "Reed Hastings and Marc Randolph founded it as a DVD rental-by-mail service before it became a streaming service and a film producer.",
  kind="streaming service and production company")
S("orion_pictures", "Orion Pictures", "us", 1978, None,
  "It was founded by former United Artists executives.", aliases=["Orion"])
S("united_artists", "United Artists", "us", 1919, None,
  "Charlie Chaplin, Mary Pickford, Douglas Fairbanks and D. W. Griffith founded it so that artists could control their own work.",
  aliases=["UA"])
S("selznick_international", "Selznick International Pictures", "us", 1935, "culver_city",
  "The producer David O. Selznick founded it, and its best-known production is Gone with the Wind.", aliases=["Selznick International"])
S("cj_entertainment", "CJ Entertainment", "kr", 1995, "seoul",
  "It is one of South Korea's largest film investors and distributors.", aliases=["CJ ENM"])
S("working_title", "Working Title Films", "uk", 1983, "london",
  "Tim Bevan and Sarah Radclyffe founded it, and it is known for British comedies such as Four Weddings and a Funeral.",
  aliases=["Working Title"], kind="production company")
S("paramount_vantage", "Paramount Vantage", "us", None, None,
  "It was the specialty label of Paramount Pictures in the 2000s and is a different brand from the main Paramount banner.",
  parent="paramount_pictures")
S("svensk_filmindustri", "Svensk Filmindustri", "se", 1919, "stockholm",
  "It is Sweden's largest film company and produced most of Ingmar Bergman's films.", aliases=["SF"])
S("rank_organisation", "The Rank Organisation", "uk", 1937, "london",
  "Founded by J. Arthur Rank, it was known for the gong-striking man that opened its films.", aliases=["Rank Organisation", "Rank"])
S("aardman", "Aardman Animations", "uk", 1972, "bristol",
  "Peter Lord and David Sproxton founded it, and it specialises in clay stop-motion animation.", aliases=["Aardman"],
  kind="animation studio")

# organisations that present awards (no films)
ORGS = {
    "ampas": dict(name="Academy of Motion Picture Arts and Sciences", aliases=["AMPAS", "the Academy"], founded=1927,
                  hq="beverly_hills", country="us", kind="organization",
                  text="The Academy of Motion Picture Arts and Sciences is a professional organization of film-industry members founded in 1927. | Its headquarters are in Beverly Hills, California. | It presents the Academy Awards, popularly known as the Oscars, at a ceremony held in Los Angeles early each year to honour films of the previous year."),
    "cannes_film_festival": dict(name="Cannes Film Festival", aliases=["Festival de Cannes", "Cannes"], founded=1946,
                                 city="cannes", country="fr", kind="film_festival",
                                 text="The Cannes Film Festival has been held in the French resort town of Cannes since 1946, usually in May. | Its top prize is the Palme d'Or, first awarded in 1955, and its second prize is the Grand Prix."),
    "venice_film_festival": dict(name="Venice Film Festival", aliases=["Venice International Film Festival", "Mostra"], founded=1932,
                                 city="venice", country="it", kind="film_festival",
                                 text="The Venice Film Festival, first held in 1932, is the oldest film festival in the world. | It takes place each year in late summer on the Lido of Venice, Italy. | Its highest prize is the Golden Lion."),
    "berlin_film_festival": dict(name="Berlin International Film Festival", aliases=["Berlinale"], founded=1951,
                                 city="berlin", country="de", kind="film_festival",
                                 text="The Berlin International Film Festival, or Berlinale, has been held in Berlin every February since 1951. | Its top prize is the Golden Bear."),
}

# ---------------------------------------------------------------------------
# awards
# ---------------------------------------------------------------------------
# id: (full name, short label used in lists, presenter, event kind, aliases, blurb)
AWARDS = {
    "academy_award_best_picture": ("Academy Award for Best Picture", "Best Picture", "ampas", "oscar",
                                   ["Best Picture", "Oscar for Best Picture"],
                                   "It is the last award presented at the Oscars ceremony and goes to the producers of the winning film."),
    "academy_award_best_director": ("Academy Award for Best Director", "Best Director", "ampas", "oscar",
                                    ["Best Director", "Oscar for Best Director"],
                                    "It honours the director of a film released in the previous year."),
    "academy_award_best_actor": ("Academy Award for Best Actor", "Best Actor", "ampas", "oscar",
                                 ["Best Actor", "Oscar for Best Actor"],
                                 "It honours a leading performance by an actor."),
    "academy_award_best_actress": ("Academy Award for Best Actress", "Best Actress", "ampas", "oscar",
                                   ["Best Actress", "Oscar for Best Actress"],
                                   "It honours a leading performance by an actress."),
    "academy_award_best_supporting_actor": ("Academy Award for Best Supporting Actor", "Best Supporting Actor", "ampas", "oscar",
                                            ["Best Supporting Actor"],
                                            "It honours an actor in a supporting role."),
    "academy_award_best_supporting_actress": ("Academy Award for Best Supporting Actress", "Best Supporting Actress", "ampas", "oscar",
                                              ["Best Supporting Actress"],
                                              "It honours an actress in a supporting role."),
    "academy_award_best_original_score": ("Academy Award for Best Original Score", "Best Original Score", "ampas", "oscar",
                                          ["Best Original Score", "Oscar for Best Original Score"],
                                          "It goes to the composers of music written specifically for a film; in some earlier years it was divided into separate dramatic and comedy or musical categories."),
    "academy_award_best_animated_feature": ("Academy Award for Best Animated Feature", "Best Animated Feature", "ampas", "oscar",
                                            ["Best Animated Feature", "Best Animated Feature Film"],
                                            "It was first presented at the ceremony held in 2002."),
    "academy_award_best_international_feature": ("Academy Award for Best International Feature Film", "Best International Feature Film", "ampas", "oscar",
                                                 ["Best International Feature Film", "Best Foreign Language Film", "Academy Award for Best Foreign Language Film"],
                                                 "It honours a feature film made outside the United States, mostly in a language other than English, and was called Best Foreign Language Film until 2020."),
    "academy_award_best_visual_effects": ("Academy Award for Best Visual Effects", "Best Visual Effects", "ampas", "oscar",
                                          ["Best Visual Effects"],
                                          "It honours the achievements of a film's visual effects team."),
    "academy_award_best_cinematography": ("Academy Award for Best Cinematography", "Best Cinematography", "ampas", "oscar",
                                          ["Best Cinematography"],
                                          "It goes to the director of photography of the winning film."),
    "academy_award_best_original_screenplay": ("Academy Award for Best Original Screenplay", "Best Original Screenplay", "ampas", "oscar",
                                               ["Best Original Screenplay"],
                                               "It honours a screenplay that is not based on previously published material."),
    "academy_award_best_film_editing": ("Academy Award for Best Film Editing", "Best Film Editing", "ampas", "oscar",
                                        ["Best Film Editing"],
                                        "It honours the editing of a feature film."),
    "palme_dor": ("Palme d'Or", "Palme d'Or", "cannes_film_festival", "cannes",
                  ["Golden Palm", "Palme d'Or at Cannes"],
                  "It is chosen by the jury of the festival's main competition, and its palm-leaf design echoes the coat of arms of Cannes."),
    "cannes_grand_prix": ("Grand Prix (Cannes Film Festival)", "Grand Prix", "cannes_film_festival", "cannes",
                          ["Grand Prix", "Cannes Grand Prix"],
                          "It is the second most prestigious prize of the Cannes Film Festival, after the Palme d'Or."),
    "golden_lion": ("Golden Lion", "Golden Lion", "venice_film_festival", "venice",
                    ["Leone d'Oro"],
                    "It takes its name from the winged lion of Saint Mark, the symbol of Venice."),
    "golden_bear": ("Golden Bear", "Golden Bear", "berlin_film_festival", "berlin",
                    ["Goldener Bär"],
                    "The bear is the heraldic symbol of the city of Berlin."),
}
EVENT_NAME = {"cannes": "Cannes Film Festival", "venice": "Venice Film Festival", "berlin": "Berlin International Film Festival"}

PROFESSIONS = {
    "director": "film director", "screenwriter": "screenwriter", "producer": "film producer", "composer": "composer",
    "actor": "actor", "animator": "animator", "cinematographer": "cinematographer", "musician": "musician",
    "critic": "film critic", "editor": "film editor", "artist": "visual artist", "band": "band",
}

# ---------------------------------------------------------------------------
# people
# ---------------------------------------------------------------------------
PEOPLE = {}


def P(pid, name, g, year, place, nats, profs, blurb="", aliases=(), dead=False, ptitle=None, etype="person"):
    PEOPLE[pid] = dict(id=pid, name=name, g=g, year=year, place=place, nats=list(nats), profs=list(profs),
                       blurb=blurb, aliases=list(aliases), dead=dead, ptitle=ptitle or name, etype=etype)


# --- directors, writers, producers -------------------------------------------
P("christopher_nolan", "Christopher Nolan", "m", 1970, "london", ["uk", "us"], ["director", "screenwriter", "producer"],
  "Many of his scripts are co-written with Jonathan, and he produces his films through Syncopy, the company he runs with Thomas. | He is known for favouring practical effects and for shooting on large-format film such as IMAX.",
  aliases=["Nolan", "Christopher Edward Nolan", "Chris Nolan"])
P("jonathan_nolan", "Jonathan Nolan", "m", 1976, "london", ["uk", "us"], ["screenwriter", "producer"],
  "He co-wrote The Prestige, The Dark Knight and Interstellar with his older brother, and his short story \"Memento Mori\" was the basis for Memento. | He later co-created the television series Westworld with his wife, Lisa Joy.",
  aliases=["Jonah Nolan"])
P("emma_thomas", "Emma Thomas", "f", 1971, "london", ["uk"], ["producer"],
  "She has produced Christopher Nolan's films since the late 1990s, and the two run the production company Syncopy together.")
P("erik_skjoldbjaerg", "Erik Skjoldbjærg", "m", None, None, ["no"], ["director"],
  "Insomnia was his first feature film.", aliases=["Erik Skjoldbjaerg"])
P("neil_burger", "Neil Burger", "m", None, None, ["us"], ["director", "screenwriter"],
  "He later directed the thriller Limitless and the first Divergent film.")
P("denis_villeneuve", "Denis Villeneuve", "m", 1967, "becancour", ["ca"], ["director", "screenwriter"],
  "He made his name with French-language films in Quebec, such as Incendies, before moving into English-language features.",
  aliases=["Villeneuve"])
P("david_lynch", "David Lynch", "m", 1946, "missoula", ["us"], ["director", "screenwriter", "artist"],
  "He was best known for surreal work such as Eraserhead, Blue Velvet and Mulholland Drive, and for the television series Twin Peaks.",
  dead=True)
P("ridley_scott", "Ridley Scott", "m", 1937, "south_shields", ["uk"], ["director", "producer"],
  "He trained at the Royal College of Art and directed thousands of television commercials before making his first feature, The Duellists, in 1977.",
  aliases=["Sir Ridley Scott"])
P("tony_scott", "Tony Scott", "m", 1944, None, ["uk"], ["director"],
  "Like his older brother, he came to feature films from advertising, and he specialised in glossy, fast-paced action films such as Crimson Tide and Man on Fire. | He died in 2012.",
  dead=True)
P("joseph_kosinski", "Joseph Kosinski", "m", 1974, None, ["us"], ["director"],
  "Trained as an architect, he made his feature debut with Tron: Legacy.")
P("steven_spielberg", "Steven Spielberg", "m", 1946, "cincinnati", ["us"], ["director", "producer"],
  "In 1994 he co-founded DreamWorks with Jeffrey Katzenberg and David Geffen. | His partnership with the composer John Williams has lasted for five decades.",
  aliases=["Spielberg"])
P("jeannot_szwarc", "Jeannot Szwarc", "m", 1939, "paris", ["fr"], ["director"],
  "He worked mostly in American television before Jaws 2, and he later made the time-travel romance Somewhere in Time.")
P("george_lucas", "George Lucas", "m", 1944, "modesto", ["us"], ["director", "producer", "screenwriter"],
  "He founded Lucasfilm in 1971 and sold it to the Walt Disney Company in 2012.", aliases=["Lucas"])
P("james_cameron", "James Cameron", "m", 1954, "kapuskasing", ["ca", "us"], ["director", "screenwriter"],
  "He moved to California as a teenager and went on to direct several of the highest-grossing films ever made. | He is also a deep-sea explorer who dived alone to the bottom of the Mariana Trench in 2012.",
  aliases=["Cameron", "Jim Cameron"])
P("kathryn_bigelow", "Kathryn Bigelow", "f", 1951, "san_carlos", ["us"], ["director"],
  "With The Hurt Locker she became the first woman to win the Academy Award for Best Director, in a year when her former husband James Cameron was also nominated, for Avatar.")
P("jean_negulesco", "Jean Negulesco", "m", 1900, "craiova", ["ro", "us"], ["director"],
  "He began as a painter before moving to Hollywood, where he directed films such as Johnny Belinda and How to Marry a Millionaire.",
  dead=True)
P("roy_ward_baker", "Roy Ward Baker", "m", 1916, None, ["uk"], ["director"],
  "He later directed many horror films for Hammer.", dead=True)
P("hayao_miyazaki", "Hayao Miyazaki", "m", 1941, "tokyo", ["jp"], ["director", "animator", "screenwriter"],
  "He co-founded Studio Ghibli in 1985 and is celebrated for hand-drawn films about flight, nature and determined young heroines. | He has announced his retirement several times, only to return for another feature.",
  aliases=["Miyazaki", "Miyazaki Hayao"])
P("goro_miyazaki", "Goro Miyazaki", "m", 1967, None, ["jp"], ["director"],
  "He trained as a landscape designer and helped create the Ghibli Museum before directing his first film.", aliases=["Gorō Miyazaki"])
P("isao_takahata", "Isao Takahata", "m", 1935, None, ["jp"], ["director"],
  "He had worked with Hayao Miyazaki since their days at Toei Animation in the 1960s, and the two co-founded Studio Ghibli. | He died in 2018.",
  aliases=["Takahata"], dead=True)
P("toshio_suzuki", "Toshio Suzuki", "m", 1948, None, ["jp"], ["producer"],
  "A former magazine editor at the publisher Tokuma Shoten, he became Studio Ghibli's long-time producer and one of its founders.")
P("hiromasa_yonebayashi", "Hiromasa Yonebayashi", "m", 1973, None, ["jp"], ["director", "animator"],
  "He worked as an animator at Studio Ghibli before directing Arrietty and When Marnie Was There, and he later joined Studio Ponoc.")
P("akira_kurosawa", "Akira Kurosawa", "m", 1910, "tokyo", ["jp"], ["director", "screenwriter"],
  "He made sixteen films with the actor Toshiro Mifune, and his samurai stories strongly influenced western and action filmmakers. | He received an honorary Academy Award in 1990.",
  aliases=["Kurosawa"], dead=True)
P("john_sturges", "John Sturges", "m", 1910, None, ["us"], ["director"],
  "He specialised in action films and westerns, including Gunfight at the O.K. Corral and The Great Escape.", dead=True)
P("sergio_leone", "Sergio Leone", "m", 1929, "rome", ["it"], ["director"],
  "He defined the spaghetti western with his Dollars Trilogy starring Clint Eastwood. | He and the composer Ennio Morricone had briefly been classmates as boys.",
  aliases=["Leone"], dead=True)
P("sergio_corbucci", "Sergio Corbucci", "m", 1926, "rome", ["it"], ["director"],
  "Often called the other Sergio to tell him apart from Sergio Leone, he directed violent westerns such as Django and The Great Silence.",
  dead=True)
P("francis_ford_coppola", "Francis Ford Coppola", "m", 1939, "detroit", ["us"], ["director", "producer", "screenwriter"],
  "He co-founded the production company American Zoetrope in San Francisco with George Lucas in 1969.", aliases=["Coppola"])
P("sofia_coppola", "Sofia Coppola", "f", 1971, "new_york_city", ["us"], ["director", "screenwriter"],
  "She appeared as an infant in her father's film The Godfather and made her own debut as a director with The Virgin Suicides in 1999.")
P("carmine_coppola", "Carmine Coppola", "m", 1910, "new_york_city", ["us"], ["composer", "musician"],
  "A flautist who played in Arturo Toscanini's NBC Symphony Orchestra, he wrote music for several films directed by his son.",
  dead=True)
P("federico_fellini", "Federico Fellini", "m", 1920, "rimini", ["it"], ["director", "screenwriter"],
  "His dreamlike, carnival-like style gave rise to the adjective Felliniesque. | He worked with the composer Nino Rota for nearly thirty years.",
  aliases=["Fellini"], dead=True)
P("alfonso_cuaron", "Alfonso Cuarón", "m", 1961, "mexico_city", ["mx"], ["director", "screenwriter", "cinematographer"],
  "His earlier films include Y Tu Mamá También and Harry Potter and the Prisoner of Azkaban. | With Guillermo del Toro and Alejandro González Iñárritu he is one of a trio of Mexican filmmakers nicknamed the Three Amigos.",
  aliases=["Alfonso Cuaron", "Cuarón"])
P("alejandro_gonzalez_inarritu", "Alejandro González Iñárritu", "m", 1963, "mexico_city", ["mx"], ["director", "screenwriter"],
  "He first drew international attention with Amores perros in 2000.",
  aliases=["Alejandro G. Iñárritu", "Alejandro Gonzalez Inarritu", "Iñárritu", "Inarritu"])
P("guillermo_del_toro", "Guillermo del Toro", "m", 1964, "guadalajara_mx", ["mx"], ["director", "screenwriter"],
  "He is known for dark fairy tales full of monsters, and he began his career creating special-effects makeup.",
  aliases=["del Toro", "Guillermo del Toro Gómez"])
P("mark_gustafson", "Mark Gustafson", "m", None, None, ["us"], ["director", "animator"],
  "He is a veteran stop-motion animator.")
P("ben_sharpsteen", "Ben Sharpsteen", "m", None, None, ["us"], ["director", "animator"],
  "He was one of the Disney studio's senior animators and directors in the 1930s and 1940s.", dead=True)
P("hamilton_luske", "Hamilton Luske", "m", None, None, ["us"], ["director", "animator"],
  "He was a Disney animator who later co-directed films such as Cinderella and Peter Pan.", dead=True)
P("robert_zemeckis", "Robert Zemeckis", "m", 1951, "chicago", ["us"], ["director"],
  "He is known for technical innovation, from the Back to the Future films to mixing live action and animation in Who Framed Roger Rabbit.",
  aliases=["Zemeckis"])
P("wes_anderson", "Wes Anderson", "m", 1969, "houston", ["us"], ["director", "screenwriter"],
  "His films are known for symmetrical compositions, pastel colours and recurring ensemble casts.")
P("wim_wenders", "Wim Wenders", "m", 1945, "dusseldorf", ["de"], ["director"],
  "He was a leading figure of the New German Cinema of the 1970s and has also made documentaries such as Buena Vista Social Club.")
P("ang_lee", "Ang Lee", "m", 1954, "pingtung", ["tw", "us"], ["director"],
  "He studied film in the United States, and his work ranges from Chinese family dramas to Jane Austen's Sense and Sensibility. | He won the Golden Lion a second time in 2007, for Lust, Caution.")
P("damien_chazelle", "Damien Chazelle", "m", 1985, "providence", ["us"], ["director", "screenwriter"],
  "He played jazz drums seriously in high school, an experience he drew on for Whiplash. | At 32 he became the youngest person to win the Academy Award for Best Director.")
P("barry_jenkins", "Barry Jenkins", "m", 1979, "miami", ["us"], ["director", "screenwriter"],
  "Moonlight was adapted from a semi-autobiographical play by Tarell Alvin McCraney, who, like Jenkins, grew up in Miami's Liberty City neighbourhood.")
P("greta_gerwig", "Greta Gerwig", "f", 1983, "sacramento", ["us"], ["director", "screenwriter", "actor"],
  "She first became known as an actor and co-writer of independent films such as Frances Ha, which she wrote with her partner Noah Baumbach.")
P("gillian_armstrong", "Gillian Armstrong", "f", 1950, "melbourne", ["au"], ["director"],
  "Her first feature, My Brilliant Career, was part of the Australian New Wave of the 1970s.")
P("joel_coen", "Joel Coen", "m", 1954, None, ["us"], ["director", "screenwriter", "producer"],
  "He usually writes, directs and produces films together with his younger brother Ethan, and the pair are known as the Coen brothers. | Their films often mix crime stories with dark humour.")
P("ethan_coen", "Ethan Coen", "m", 1957, None, ["us"], ["director", "screenwriter", "producer"],
  "He and his older brother Joel are known together as the Coen brothers, and they edit their films under the shared pseudonym Roderick Jaynes.")
P("peter_jackson", "Peter Jackson", "m", 1961, None, ["nz"], ["director", "producer"],
  "He began with low-budget splatter comedies such as Bad Taste and Braindead before taking on J. R. R. Tolkien's novel.",
  aliases=["Sir Peter Jackson"])
P("ralph_bakshi", "Ralph Bakshi", "m", 1938, None, ["us"], ["director", "animator"],
  "He is known for adult-oriented animated films such as Fritz the Cat.")
P("bong_joon_ho", "Bong Joon-ho", "m", 1969, "daegu", ["kr"], ["director", "screenwriter"],
  "His films mix thriller, comedy and social satire and return again and again to divisions of class.",
  aliases=["Bong Joon Ho", "Bong"])
P("charles_band", "Charles Band", "m", 1951, None, ["us"], ["director", "producer"],
  "He is a prolific producer of low-budget horror and fantasy films and founded the company Full Moon Features.")
P("park_chan_wook", "Park Chan-wook", "m", 1963, "seoul", ["kr"], ["director"],
  "Oldboy is the middle part of his Vengeance Trilogy, and he later directed The Handmaiden.", aliases=["Park Chan Wook"])
P("spike_lee", "Spike Lee", "m", 1957, "atlanta", ["us"], ["director"],
  "Raised in Brooklyn, he made his name with Do the Right Thing and later won an Academy Award for the screenplay of BlacKkKlansman.")
P("quentin_tarantino", "Quentin Tarantino", "m", 1963, "knoxville", ["us"], ["director", "screenwriter"],
  "He worked in a video rental store before his screenwriting career took off. | His films are known for sharp dialogue, out-of-order storytelling and stylised violence.",
  aliases=["Tarantino", "Quentin Jerome Tarantino"])
P("martin_scorsese", "Martin Scorsese", "m", 1942, "new_york_city", ["us"], ["director"],
  "He grew up in Manhattan's Little Italy and has made many films with Robert De Niro and, later, Leonardo DiCaprio. | He is also a prominent champion of film preservation.",
  aliases=["Scorsese"])
P("andrew_lau", "Andrew Lau", "m", None, "hong_kong", [], ["director", "cinematographer"],
  "He is a Hong Kong director and cinematographer and is not related to the actor Andy Lau, who starred in Infernal Affairs.")
P("alan_mak", "Alan Mak", "m", None, None, [], ["director", "screenwriter"],
  "He co-wrote the screenplay of Infernal Affairs with Felix Chong.")
P("alfred_hitchcock", "Alfred Hitchcock", "m", 1899, "london", ["uk", "us"], ["director"],
  "Known as the Master of Suspense, he directed films in Britain before moving to Hollywood in 1939. | He never won a competitive Academy Award for directing.",
  aliases=["Hitchcock", "Sir Alfred Hitchcock"], dead=True)
P("gus_van_sant", "Gus Van Sant", "m", 1952, "louisville", ["us"], ["director"],
  "He is known for independent films such as My Own Private Idaho and for Good Will Hunting.")
P("stanley_kubrick", "Stanley Kubrick", "m", 1928, "new_york_city", ["us"], ["director"],
  "He moved to England in the early 1960s and made most of his later films there. | He was famous for meticulous preparation and for shooting scenes dozens of times.",
  aliases=["Kubrick"], dead=True)
P("ingmar_bergman", "Ingmar Bergman", "m", 1918, "uppsala", ["se"], ["director", "screenwriter"],
  "He was also a major theatre director. | He was not related to the actress Ingrid Bergman, although she starred in his Autumn Sonata.",
  aliases=["Bergman"], dead=True)
P("michael_curtiz", "Michael Curtiz", "m", 1886, "budapest", ["hu", "us"], ["director"],
  "He directed films in Hungary and Austria before Warner Bros. brought him to Hollywood in 1926.", dead=True)
P("satyajit_ray", "Satyajit Ray", "m", 1921, "kolkata", ["in"], ["director"],
  "He received an honorary Academy Award for lifetime achievement in 1992, shortly before his death.", dead=True)
P("francois_truffaut", "François Truffaut", "m", 1932, "paris", ["fr"], ["director", "critic"],
  "He wrote criticism for the magazine Cahiers du Cinéma before becoming one of the founders of the French New Wave. | He also acted in Steven Spielberg's Close Encounters of the Third Kind.",
  aliases=["Francois Truffaut", "Truffaut"], dead=True)
P("jean_luc_godard", "Jean-Luc Godard", "m", 1930, "paris", ["fr", "ch"], ["director", "critic"],
  "Like Truffaut, he wrote for Cahiers du Cinéma, and he became the most radical experimenter of the French New Wave.",
  aliases=["Godard"], dead=True)
P("jim_mcbride", "Jim McBride", "m", None, None, ["us"], ["director"],
  "He began in underground cinema with David Holzman's Diary.")
P("wong_kar_wai", "Wong Kar-wai", "m", 1958, "shanghai", [], ["director"],
  "He moved to Hong Kong as a child, and his films are known for moody colour, popular music and fragmented storytelling. | He often works with the cinematographer Christopher Doyle.",
  aliases=["Wong Kar Wai"])
P("john_lasseter", "John Lasseter", "m", 1957, None, ["us"], ["director", "animator"],
  "He was a founding creative figure at Pixar and later ran Disney's animation studios before leaving in 2018.")
P("brad_bird", "Brad Bird", "m", 1957, "kalispell", ["us"], ["director", "animator"],
  "He worked on The Simpsons and directed The Iron Giant before joining Pixar.")
P("pete_docter", "Pete Docter", "m", 1968, "bloomington_mn", ["us"], ["director", "animator"],
  "He became Pixar's chief creative officer in 2018.")
P("lee_unkrich", "Lee Unkrich", "m", 1967, None, ["us"], ["director", "editor"],
  "He edited several Pixar films and directed Toy Story 3.")
P("andrew_adamson", "Andrew Adamson", "m", 1966, None, ["nz"], ["director"],
  "He went on to direct The Chronicles of Narnia: The Lion, the Witch and the Wardrobe.")
P("vicky_jenson", "Vicky Jenson", "f", None, None, ["us"], ["director", "animator"],
  "She later co-directed Shark Tale.")
P("roger_allers", "Roger Allers", "m", None, None, ["us"], ["director", "animator"],
  "He was a story artist at Walt Disney Feature Animation.")
P("rob_minkoff", "Rob Minkoff", "m", None, None, ["us"], ["director"],
  "He later directed Stuart Little.")
P("jon_favreau", "Jon Favreau", "m", 1966, "new_york_city", ["us"], ["director", "actor"],
  "He directed Iron Man, the film that launched the Marvel Cinematic Universe, and created the Star Wars series The Mandalorian.")
P("chris_buck", "Chris Buck", "m", None, None, ["us"], ["director", "animator"],
  "He had earlier co-directed Disney's Tarzan.")
P("jennifer_lee", "Jennifer Lee", "f", None, None, ["us"], ["director", "screenwriter"],
  "She wrote the screenplay of Frozen and later became chief creative officer of Walt Disney Animation Studios.")
P("nick_park", "Nick Park", "m", 1958, "preston", ["uk"], ["director", "animator"],
  "He created the characters Wallace and Gromit at Aardman Animations in Bristol.")
P("steve_box", "Steve Box", "m", None, None, ["uk"], ["director", "animator"],
  "He is an animator who worked for many years at Aardman.")
P("john_madden", "John Madden", "m", 1949, None, ["uk"], ["director"],
  "He should not be confused with the American football coach and broadcaster of the same name.")
P("tom_hooper", "Tom Hooper", "m", 1972, "london", ["uk"], ["director"],
  "He later directed the film version of the musical Les Misérables.")
P("steve_mcqueen_director", "Steve McQueen", "m", 1969, "london", ["uk"], ["director", "artist"],
  "He won the Turner Prize as a visual artist in 1999. | He is unrelated to the American actor of the same name, who starred in The Magnificent Seven.",
  ptitle="Steve McQueen (director)", aliases=["Sir Steve McQueen"])
P("woody_allen", "Woody Allen", "m", 1935, "new_york_city", ["us"], ["director", "actor", "screenwriter"],
  "He began as a comedy writer and stand-up comedian, and many of his films are set in New York City.")
P("peter_farrelly", "Peter Farrelly", "m", 1956, None, ["us"], ["director"],
  "With his brother Bobby he had earlier made broad comedies such as Dumb and Dumber and There's Something About Mary.")
P("daniel_kwan", "Daniel Kwan", "m", 1988, None, ["us"], ["director", "screenwriter"],
  "He works with Daniel Scheinert as the directing duo known as Daniels, which began by making music videos.")
P("daniel_scheinert", "Daniel Scheinert", "m", 1987, None, ["us"], ["director", "screenwriter"],
  "He and Daniel Kwan direct together under the name Daniels, and their first feature was Swiss Army Man.")
P("todd_phillips", "Todd Phillips", "m", 1970, None, ["us"], ["director"],
  "He was previously known for comedies such as The Hangover.")
P("chloe_zhao", "Chloé Zhao", "f", 1982, "beijing", ["cn"], ["director"],
  "She was the second woman to win the Academy Award for Best Director, after Kathryn Bigelow.", aliases=["Chloe Zhao"])
P("paul_greengrass", "Paul Greengrass", "m", 1955, None, ["uk"], ["director"],
  "A former documentary maker, he later directed The Bourne Supremacy and United 93.")
P("walt_disney", "Walt Disney", "m", 1901, "chicago", ["us"], ["producer", "animator"],
  "He co-founded the Disney studio with his brother Roy in 1923 and created Mickey Mouse. | He produced the studio's early animated features, beginning with Snow White and the Seven Dwarfs.",
  dead=True)

# --- composers -------------------------------------------------------------
P("hans_zimmer", "Hans Zimmer", "m", 1957, "frankfurt", ["de"], ["composer"],
  "He moved to England as a teenager and began as a synthesizer player, even appearing in the music video for \"Video Killed the Radio Star\". | His company Remote Control Productions in Santa Monica has trained many younger film composers.",
  aliases=["Zimmer"])
P("james_newton_howard", "James Newton Howard", "m", 1951, "los_angeles", ["us"], ["composer"],
  "He earlier played keyboards in Elton John's band.")
P("david_julyan", "David Julyan", "m", None, None, ["uk"], ["composer"],
  "His atmospheric electronic scores are often built from slowly shifting drones.")
P("ludwig_goransson", "Ludwig Göransson", "m", 1984, "linkoping", ["se"], ["composer"],
  "He also works as a record producer, notably for Childish Gambino, and he won an earlier Academy Award for the score of Black Panther.",
  aliases=["Ludwig Goransson"])
P("johann_johannsson", "Jóhann Jóhannsson", "m", 1969, "reykjavik", ["is"], ["composer"],
  "He scored Denis Villeneuve's Prisoners and Sicario as well as Arrival, and he died in Berlin in 2018.",
  aliases=["Johann Johannsson"], dead=True)
P("benjamin_wallfisch", "Benjamin Wallfisch", "m", None, None, ["uk"], ["composer"],
  "He has written the scores for horror films such as It.")
P("vangelis", "Vangelis", "m", 1943, None, ["gr"], ["composer", "musician"],
  "A pioneer of electronic music, he won an Academy Award for the score of Chariots of Fire.", dead=True)
P("jerry_goldsmith", "Jerry Goldsmith", "m", 1929, "los_angeles", ["us"], ["composer"],
  "He won an Academy Award for The Omen and wrote the music for several Star Trek films.", dead=True)
P("lisa_gerrard", "Lisa Gerrard", "f", 1961, "melbourne", ["au"], ["composer", "musician"],
  "She is best known as a founding member of the band Dead Can Dance.")
P("harold_faltermeyer", "Harold Faltermeyer", "m", 1952, "munich", ["de"], ["composer"],
  "His synthesizer instrumental \"Axel F\" from Beverly Hills Cop became a worldwide hit.")
P("john_williams", "John Williams", "m", 1932, "floral_park", ["us"], ["composer"],
  "He also wrote the music for the Harry Potter and Indiana Jones films, and he conducted the Boston Pops Orchestra from 1980 to 1993.",
  aliases=["John Towner Williams"])
P("john_williams_guitarist", "John Williams", "m", 1941, "melbourne", ["au", "uk"], ["musician"],
  "He is a classical guitarist who grew up in London and has performed concertos with orchestras worldwide. | He is a different person from the American film composer of the same name.",
  ptitle="John Williams (guitarist)")
P("brad_fiedel", "Brad Fiedel", "m", None, None, ["us"], ["composer"],
  "His pulsing electronic theme for The Terminator returned in Terminator 2: Judgment Day.")
P("james_horner", "James Horner", "m", 1953, "los_angeles", ["us"], ["composer"],
  "He also scored Braveheart and Apollo 13, and he died in a plane crash in 2015.", dead=True)
P("joe_hisaishi", "Joe Hisaishi", "m", 1950, "nakano_nagano", ["jp"], ["composer"],
  "Born Mamoru Fujisawa, he took his professional name from a Japanese rendering of Quincy Jones. | He has also worked often with the director Takeshi Kitano.",
  aliases=["Hisaishi", "Mamoru Fujisawa"])
P("michio_mamiya", "Michio Mamiya", "m", 1929, None, ["jp"], ["composer"],
  "He is known for concert works drawing on Japanese folk song.")
P("fumio_hayasaka", "Fumio Hayasaka", "m", 1914, None, ["jp"], ["composer"],
  "He died in 1955, while Kurosawa was making I Live in Fear.", dead=True)
P("masaru_sato", "Masaru Sato", "m", None, None, ["jp"], ["composer"],
  "A student of Fumio Hayasaka, he became Kurosawa's composer after Hayasaka's death.", dead=True)
P("toru_takemitsu", "Toru Takemitsu", "m", 1930, "tokyo", ["jp"], ["composer"],
  "He was largely self-taught and became one of the best-known Japanese composers of concert music.",
  aliases=["Tōru Takemitsu"], dead=True)
P("elmer_bernstein", "Elmer Bernstein", "m", 1922, "new_york_city", ["us"], ["composer"],
  "He was not related to the conductor Leonard Bernstein, and he won an Academy Award for Thoroughly Modern Millie.", dead=True)
P("ennio_morricone", "Ennio Morricone", "m", 1928, "rome", ["it"], ["composer"],
  "He wrote more than four hundred scores for film and television and received an honorary Academy Award in 2007.",
  aliases=["Morricone"], dead=True)
P("nino_rota", "Nino Rota", "m", 1911, "milan", ["it"], ["composer"],
  "He was Federico Fellini's regular composer from The White Sheik to Orchestra Rehearsal.", dead=True)
P("steven_price", "Steven Price", "m", None, None, ["uk"], ["composer"],
  "He began his career as a music editor and programmer on other composers' scores.")
P("antonio_sanchez", "Antonio Sánchez", "m", None, None, ["mx"], ["composer", "musician"],
  "He is a jazz drummer best known for his work with the guitarist Pat Metheny, and he wrote the Birdman score almost entirely for solo drums.",
  aliases=["Antonio Sanchez"])
P("ryuichi_sakamoto", "Ryuichi Sakamoto", "m", 1952, "tokyo", ["jp"], ["composer", "musician"],
  "A founding member of Yellow Magic Orchestra, he shared an Academy Award for the score of The Last Emperor.", dead=True)
P("alva_noto", "Alva Noto", "m", None, None, ["de"], ["composer", "musician"],
  "The name is a pseudonym of the electronic musician and visual artist Carsten Nicolai.", aliases=["Carsten Nicolai"])
P("javier_navarrete", "Javier Navarrete", "m", None, None, ["es"], ["composer"],
  "He had earlier written the music for del Toro's The Devil's Backbone.")
P("alexandre_desplat", "Alexandre Desplat", "m", 1961, "paris", ["fr"], ["composer"],
  "He is a frequent collaborator of Wes Anderson and Guillermo del Toro.")
P("leigh_harline", "Leigh Harline", "m", None, None, ["us"], ["composer"],
  "He wrote the music of the song \"When You Wish Upon a Star\" with the lyricist Ned Washington.", dead=True)
P("alan_silvestri", "Alan Silvestri", "m", 1950, None, ["us"], ["composer"],
  "He has been Robert Zemeckis's regular composer since Romancing the Stone and also scored The Avengers.")
P("ry_cooder", "Ry Cooder", "m", 1947, "los_angeles", ["us"], ["musician", "composer"],
  "A celebrated slide guitarist, he also produced the Buena Vista Social Club recordings.")
P("tan_dun", "Tan Dun", "m", 1957, None, ["cn"], ["composer"],
  "He writes both concert works and film music.")
P("gustavo_santaolalla", "Gustavo Santaolalla", "m", 1951, None, ["ar"], ["composer", "musician"],
  "He won consecutive Academy Awards for original score, the second for Babel, and composed the music for the video game The Last of Us.")
P("mychael_danna", "Mychael Danna", "m", 1958, None, ["ca"], ["composer"],
  "He frequently scores films by Atom Egoyan.")
P("justin_hurwitz", "Justin Hurwitz", "m", 1985, None, ["us"], ["composer"],
  "He and Damien Chazelle were roommates and bandmates at Harvard University.")
P("nicholas_britell", "Nicholas Britell", "m", None, None, ["us"], ["composer"],
  "He also wrote the theme for the television series Succession.")
P("jon_brion", "Jon Brion", "m", None, None, ["us"], ["composer", "musician"],
  "He is a multi-instrumentalist and record producer.")
P("thomas_newman", "Thomas Newman", "m", 1955, "los_angeles", ["us"], ["composer"],
  "His father, Alfred Newman, headed the music department at 20th Century Fox, and his cousin is the songwriter Randy Newman.")
P("mark_ronson", "Mark Ronson", "m", 1975, "london", ["uk", "us"], ["musician", "producer", "composer"],
  "He is best known as a record producer, including for Amy Winehouse and for the hit \"Uptown Funk\".")
P("andrew_wyatt", "Andrew Wyatt", "m", None, None, ["us"], ["musician", "composer"],
  "He is a songwriter and a member of the band Miike Snow.")
P("carter_burwell", "Carter Burwell", "m", 1955, None, ["us"], ["composer"],
  "He has scored almost every Coen brothers film since their debut, Blood Simple.")
P("howard_shore", "Howard Shore", "m", 1946, "toronto", ["ca"], ["composer"],
  "He was the first musical director of Saturday Night Live and has a long partnership with the director David Cronenberg.")
P("jung_jae_il", "Jung Jae-il", "m", None, None, ["kr"], ["composer"],
  "He later wrote the music for the Netflix series Squid Game.", aliases=["Jung Jae Il"])
P("bernard_herrmann", "Bernard Herrmann", "m", 1911, "new_york_city", ["us"], ["composer"],
  "He began in radio with Orson Welles and scored Citizen Kane before his celebrated collaboration with Alfred Hitchcock. | Taxi Driver was the last score he completed before his death in 1975.",
  dead=True)
P("franz_waxman", "Franz Waxman", "m", None, None, ["de", "us"], ["composer"],
  "He won consecutive Academy Awards for Sunset Boulevard and A Place in the Sun.", dead=True)
P("max_steiner", "Max Steiner", "m", 1888, "vienna", ["at", "us"], ["composer"],
  "Often called the father of film music, he also composed the score of Gone with the Wind.", dead=True)
P("ravi_shankar", "Ravi Shankar", "m", 1920, "varanasi", ["in"], ["musician", "composer"],
  "The sitar virtuoso became internationally famous in the 1960s, partly through his friendship with George Harrison of the Beatles.",
  dead=True)
P("randy_newman", "Randy Newman", "m", 1943, "los_angeles", ["us"], ["composer", "musician"],
  "His song \"You've Got a Friend in Me\" comes from Toy Story, and his uncles Alfred and Lionel Newman were also film composers.")
P("michael_giacchino", "Michael Giacchino", "m", 1967, None, ["us"], ["composer"],
  "He began his career writing music for video games, including the Medal of Honor series.")
P("harry_gregson_williams", "Harry Gregson-Williams", "m", None, None, ["uk"], ["composer"],
  "He also scored the Chronicles of Narnia films.")
P("john_powell", "John Powell", "m", None, None, ["uk"], ["composer"],
  "He later scored How to Train Your Dragon.")
P("christophe_beck", "Christophe Beck", "m", None, None, ["ca"], ["composer"],
  "He has scored many comedies, including The Hangover.")
P("julian_nott", "Julian Nott", "m", None, None, ["uk"], ["composer"],
  "He wrote the familiar brass-band theme of the Wallace and Gromit films.")
P("stephen_warbeck", "Stephen Warbeck", "m", None, None, ["uk"], ["composer"],
  "He has also written a great deal of music for the theatre.")
P("kris_bowers", "Kris Bowers", "m", None, None, ["us"], ["composer"],
  "He is a jazz pianist as well as a film composer.")
P("son_lux", "Son Lux", "n", None, None, ["us"], ["band"],
  "The experimental trio is made up of Ryan Lott, Rafiq Bhatia and Ian Chang.", etype="musical_group")
P("hildur_gudnadottir", "Hildur Guðnadóttir", "f", 1982, "reykjavik", ["is"], ["composer", "musician"],
  "A cellist, she also wrote the music for the television miniseries Chernobyl.", aliases=["Hildur Gudnadottir"])
P("philip_glass", "Philip Glass", "m", 1937, "baltimore", ["us"], ["composer"],
  "He is a pioneer of minimalist music and wrote operas such as Einstein on the Beach.")
P("leonard_rosenman", "Leonard Rosenman", "m", None, None, ["us"], ["composer"],
  "He won Academy Awards for adapting the music of Barry Lyndon and Bound for Glory.", dead=True)
P("luis_bacalov", "Luis Bacalov", "m", None, None, ["ar", "it"], ["composer"],
  "He later won an Academy Award for the score of Il Postino.", dead=True)
P("cecile_corbel", "Cécile Corbel", "f", None, None, ["fr"], ["musician", "composer"],
  "A Breton harpist and singer, she sent Studio Ghibli an album of her music, which led to her scoring Arrietty.",
  aliases=["Cecile Corbel"])
P("wendy_carlos", "Wendy Carlos", "f", None, None, ["us"], ["composer", "musician"],
  "Her 1968 album Switched-On Bach helped popularise the Moog synthesizer.")
P("rachel_elkind", "Rachel Elkind", "f", None, None, ["us"], ["composer", "producer"],
  "She produced Wendy Carlos's early albums.")
P("ludovico_einaudi", "Ludovico Einaudi", "m", None, None, ["it"], ["composer", "musician"],
  "He is an Italian pianist known for minimalist piano pieces.")

# --- cinematographers ------------------------------------------------------
P("wally_pfister", "Wally Pfister", "m", None, None, ["us"], ["cinematographer"],
  "He shot every Christopher Nolan film from Memento to The Dark Knight Rises.")
P("emmanuel_lubezki", "Emmanuel Lubezki", "m", 1964, "mexico_city", ["mx"], ["cinematographer"],
  "Nicknamed El Chivo, he is known for long, flowing takes and natural light.", aliases=["Chivo"])
P("roger_deakins", "Roger Deakins", "m", 1949, "torquay", ["uk"], ["cinematographer"],
  "He won his first Academy Award after thirteen unsuccessful nominations.")
P("hoyte_van_hoytema", "Hoyte van Hoytema", "m", None, None, ["nl", "se"], ["cinematographer"],
  "He has photographed Christopher Nolan's films since Interstellar.")
P("greig_fraser", "Greig Fraser", "m", None, None, ["au"], ["cinematographer"],
  "He also shot Zero Dark Thirty and The Batman.")
P("guillermo_navarro", "Guillermo Navarro", "m", None, None, ["mx"], ["cinematographer"],
  "He has photographed several of Guillermo del Toro's films.")
P("russell_carpenter", "Russell Carpenter", "m", None, None, ["us"], ["cinematographer"],
  "He has worked with James Cameron on several films.")

# --- actors ----------------------------------------------------------------
A = "actor"
P("leonardo_dicaprio", "Leonardo DiCaprio", "m", 1974, "los_angeles", ["us"], [A, "producer"],
  "He began acting on television as a child and became a global star with Titanic. | He won his first Academy Award after four earlier acting nominations.",
  aliases=["DiCaprio", "Leo DiCaprio"])
P("christian_bale", "Christian Bale", "m", 1974, "haverfordwest", ["uk"], [A],
  "He first came to attention as a child in Steven Spielberg's Empire of the Sun and is known for drastic physical transformations for his roles.")
P("heath_ledger", "Heath Ledger", "m", 1979, "perth_au", ["au"], [A],
  "He died in January 2008, months before The Dark Knight was released, so his Academy Award was presented posthumously.",
  dead=True)
P("cillian_murphy", "Cillian Murphy", "m", 1976, "cork", ["ie"], [A],
  "He is also known as Tommy Shelby in the television series Peaky Blinders, and he appeared in several Nolan films before taking the lead in Oppenheimer.")
P("robert_downey_jr", "Robert Downey Jr.", "m", 1965, "new_york_city", ["us"], [A],
  "He played Tony Stark, also known as Iron Man, in the Marvel Cinematic Universe from 2008 to 2019.",
  aliases=["Robert Downey Jr", "RDJ", "Robert Downey"])
P("emily_blunt", "Emily Blunt", "f", 1983, "london", ["uk", "us"], [A],
  "Her other films include The Devil Wears Prada and A Quiet Place.")
P("matt_damon", "Matt Damon", "m", 1970, "cambridge_ma", ["us"], [A, "screenwriter"],
  "He won an Academy Award for co-writing Good Will Hunting with his childhood friend Ben Affleck.")
P("matthew_mcconaughey", "Matthew McConaughey", "m", 1969, "uvalde", ["us"], [A],
  "He won the Academy Award for Best Actor for Dallas Buyers Club in the year Interstellar was released.")
P("anne_hathaway", "Anne Hathaway", "f", 1982, "new_york_city", ["us"], [A],
  "She won an Academy Award for Les Misérables.")
P("jessica_chastain", "Jessica Chastain", "f", 1977, "sacramento", ["us"], [A],
  "She won the Academy Award for Best Actress for The Eyes of Tammy Faye.")
P("tom_hardy", "Tom Hardy", "m", 1977, "london", ["uk"], [A],
  "He also played the title role in Mad Max: Fury Road.")
P("michael_caine", "Michael Caine", "m", 1933, "london", ["uk"], [A],
  "He won Academy Awards for Hannah and Her Sisters and The Cider House Rules.", aliases=["Sir Michael Caine"])
P("hugh_jackman", "Hugh Jackman", "m", 1968, "sydney_au", ["au"], [A],
  "He is best known for playing Wolverine in the X-Men films.")
P("scarlett_johansson", "Scarlett Johansson", "f", 1984, "new_york_city", ["us"], [A],
  "She has also played Black Widow in the Marvel films.")
P("edward_norton", "Edward Norton", "m", 1969, "boston", ["us"], [A],
  "He is also known for Fight Club and American History X.")
P("paul_giamatti", "Paul Giamatti", "m", None, None, ["us"], [A],
  "He is known for character roles in films such as Sideways.")
P("al_pacino", "Al Pacino", "m", 1940, "new_york_city", ["us"], [A],
  "He won the Academy Award for Best Actor for Scent of a Woman.", aliases=["Pacino"])
P("robin_williams", "Robin Williams", "m", 1951, "chicago", ["us"], [A],
  "A comedian famous for rapid-fire improvisation, he won an Academy Award for Good Will Hunting.", dead=True)
P("hilary_swank", "Hilary Swank", "f", 1974, "lincoln_ne", ["us"], [A],
  "She won two Academy Awards for Best Actress, for Boys Don't Cry and Million Dollar Baby.")
P("stellan_skarsgard", "Stellan Skarsgård", "m", 1951, "gothenburg", ["se"], [A],
  "Several of his sons, including Alexander and Bill Skarsgård, are also actors.", aliases=["Stellan Skarsgard"])
P("guy_pearce", "Guy Pearce", "m", 1967, "ely", ["au", "uk"], [A],
  "He moved to Australia as a child and first became known in the soap opera Neighbours.")
P("carrie_anne_moss", "Carrie-Anne Moss", "f", None, None, ["ca"], [A],
  "She is best known as Trinity in The Matrix.")
P("joe_pantoliano", "Joe Pantoliano", "m", None, None, ["us"], [A],
  "He is a character actor often cast as small-time crooks.")
P("joseph_gordon_levitt", "Joseph Gordon-Levitt", "m", 1981, "los_angeles", ["us"], [A],
  "He began as a child actor in the sitcom 3rd Rock from the Sun.")
P("elliot_page", "Elliot Page", "m", 1987, "halifax", ["ca"], [A],
  "He received an Academy Award nomination for Juno.")
P("marion_cotillard", "Marion Cotillard", "f", 1975, "paris", ["fr"], [A],
  "She won the Academy Award for Best Actress for playing Édith Piaf in La Vie en Rose.")
P("aaron_eckhart", "Aaron Eckhart", "m", None, None, ["us"], [A],
  "He first gained attention in Neil LaBute's In the Company of Men.")
P("liam_neeson", "Liam Neeson", "m", 1952, "ballymena", ["uk", "ie"], [A],
  "Later in his career he became an action star with the Taken films.")
P("amy_adams", "Amy Adams", "f", 1974, "vicenza", ["us"], [A],
  "She was born in Italy, where her father was stationed with the US Army.")
P("jeremy_renner", "Jeremy Renner", "m", None, None, ["us"], [A],
  "He played Hawkeye in the Marvel films.")
P("ryan_gosling", "Ryan Gosling", "m", 1980, "london_on", ["ca"], [A],
  "He began as a child performer on The Mickey Mouse Club.")
P("harrison_ford", "Harrison Ford", "m", 1942, "chicago", ["us"], [A],
  "He was working as a carpenter in Los Angeles when Star Wars made him a star.")
P("rutger_hauer", "Rutger Hauer", "m", None, None, ["nl"], [A],
  "He worked in both European and Hollywood films and made several early films with Paul Verhoeven.", dead=True)
P("timothee_chalamet", "Timothée Chalamet", "m", 1995, "new_york_city", ["us", "fr"], [A],
  "He received an Academy Award nomination for Call Me by Your Name.", aliases=["Timothee Chalamet"])
P("zendaya", "Zendaya", "f", 1996, "oakland", ["us"], [A],
  "She also stars in the television series Euphoria.")
P("rebecca_ferguson", "Rebecca Ferguson", "f", 1983, "stockholm", ["se"], [A],
  "She is also known for the Mission: Impossible films.")
P("oscar_isaac", "Oscar Isaac", "m", 1979, "guatemala_city", ["us"], [A],
  "He was raised in Florida and played Poe Dameron in the Star Wars sequel trilogy.")
P("kyle_maclachlan", "Kyle MacLachlan", "m", 1959, "yakima", ["us"], [A],
  "He also played Agent Dale Cooper in David Lynch's Twin Peaks.")
P("sigourney_weaver", "Sigourney Weaver", "f", 1949, "new_york_city", ["us"], [A],
  "Her role as Ellen Ripley made her one of the first women to lead a major science fiction franchise.")
P("russell_crowe", "Russell Crowe", "m", 1964, "wellington", ["nz", "au"], [A],
  "He moved to Australia as a child and has lived there for most of his life.")
P("joaquin_phoenix", "Joaquin Phoenix", "m", 1974, "san_juan_pr", ["us"], [A],
  "His older brother was the actor River Phoenix.")
P("tom_cruise", "Tom Cruise", "m", 1962, "syracuse_ny", ["us"], [A, "producer"],
  "He is known for performing his own stunts, notably in the Mission: Impossible series.")
P("roy_scheider", "Roy Scheider", "m", None, None, ["us"], [A],
  "He also starred in The French Connection and All That Jazz.", dead=True)
P("robert_shaw", "Robert Shaw", "m", None, None, ["uk"], [A],
  "He was also a novelist and playwright.", dead=True)
P("richard_dreyfuss", "Richard Dreyfuss", "m", 1947, "new_york_city", ["us"], [A],
  "He won the Academy Award for Best Actor for The Goodbye Girl.")
P("henry_thomas", "Henry Thomas", "m", None, None, ["us"], [A],
  "He was ten years old when E.T. was filmed.")
P("drew_barrymore", "Drew Barrymore", "f", 1975, "culver_city", ["us"], [A],
  "A member of the Barrymore acting family, she was six years old when she filmed E.T.")
P("sam_neill", "Sam Neill", "m", 1947, "omagh", ["nz"], [A],
  "He was born in Northern Ireland and moved to New Zealand with his family as a child.")
P("laura_dern", "Laura Dern", "f", 1967, "los_angeles", ["us"], [A],
  "She is the daughter of the actors Bruce Dern and Diane Ladd, and she won an Academy Award for Marriage Story.")
P("jeff_goldblum", "Jeff Goldblum", "m", 1952, "pittsburgh", ["us"], [A],
  "He also starred in The Fly and Independence Day.")
P("ben_kingsley", "Ben Kingsley", "m", None, None, ["uk"], [A],
  "He won the Academy Award for Best Actor for Gandhi.")
P("ralph_fiennes", "Ralph Fiennes", "m", 1962, "ipswich", ["uk"], [A],
  "He also played Lord Voldemort in the Harry Potter films.")
P("joseph_fiennes", "Joseph Fiennes", "m", 1970, None, ["uk"], [A],
  "He later starred in the television series The Handmaid's Tale.")
P("tom_hanks", "Tom Hanks", "m", 1956, "concord_ca", ["us"], [A],
  "That award came a year after his first Best Actor win, for Philadelphia.")
P("mark_hamill", "Mark Hamill", "m", 1951, "oakland", ["us"], [A],
  "He is also a prolific voice actor, known for voicing the Joker in Batman animation.")
P("carrie_fisher", "Carrie Fisher", "f", 1956, "beverly_hills", ["us"], [A],
  "She was the daughter of Debbie Reynolds and Eddie Fisher, and she also wrote the novel Postcards from the Edge.", dead=True)
P("ron_howard", "Ron Howard", "m", 1954, None, ["us"], [A, "director"],
  "He later became a director himself and won the Academy Award for Best Director for A Beautiful Mind.")
P("arnold_schwarzenegger", "Arnold Schwarzenegger", "m", 1947, "thal", ["at", "us"], [A],
  "A former champion bodybuilder, he later served as Governor of California from 2003 to 2011.")
P("linda_hamilton", "Linda Hamilton", "f", None, None, ["us"], [A],
  "She returned as Sarah Connor in Terminator 2: Judgment Day.")
P("kate_winslet", "Kate Winslet", "f", 1975, "reading_uk", ["uk"], [A],
  "She won the Academy Award for Best Actress for The Reader.")
P("barbara_stanwyck", "Barbara Stanwyck", "f", 1907, "new_york_city", ["us"], [A],
  "She was one of Hollywood's leading stars of the 1930s and 1940s, with roles such as the scheming wife in Double Indemnity.",
  dead=True)
P("clifton_webb", "Clifton Webb", "m", None, None, ["us"], [A],
  "He was known for playing fastidious, sharp-tongued characters.", dead=True)
P("kenneth_more", "Kenneth More", "m", None, None, ["uk"], [A],
  "He was one of the most popular British film stars of the 1950s.", dead=True)
P("sam_worthington", "Sam Worthington", "m", None, None, ["au"], [A],
  "He grew up in Perth, Western Australia.")
P("zoe_saldana", "Zoe Saldaña", "f", None, None, ["us"], [A],
  "She is also known for playing Gamora in Guardians of the Galaxy.", aliases=["Zoe Saldana"])
P("toshiro_mifune", "Toshiro Mifune", "m", 1920, "qingdao", ["jp"], [A],
  "He was born to Japanese parents in China and became the actor most closely associated with Akira Kurosawa.",
  aliases=["Mifune", "Toshirō Mifune"], dead=True)
P("machiko_kyo", "Machiko Kyō", "f", None, None, ["jp"], [A],
  "She also starred in Kenji Mizoguchi's Ugetsu.", aliases=["Machiko Kyo"], dead=True)
P("takashi_shimura", "Takashi Shimura", "m", None, None, ["jp"], [A],
  "He appeared in more than twenty Kurosawa films.", dead=True)
P("tatsuya_nakadai", "Tatsuya Nakadai", "m", None, None, ["jp"], [A],
  "He also starred in Kurosawa's Kagemusha.")
P("yul_brynner", "Yul Brynner", "m", 1920, "vladivostok", ["us"], [A],
  "He won the Academy Award for Best Actor for The King and I, a role he also played on stage for decades.", dead=True)
P("steve_mcqueen", "Steve McQueen", "m", 1930, None, ["us"], [A],
  "Nicknamed the King of Cool, he starred in The Great Escape and Bullitt. | He is a different person from the British director Steve McQueen.",
  dead=True)
P("clint_eastwood", "Clint Eastwood", "m", 1930, "san_francisco", ["us"], [A, "director"],
  "He later became a director as well and won the Academy Award for Best Director for Unforgiven and for Million Dollar Baby.",
  aliases=["Eastwood"])
P("lee_van_cleef", "Lee Van Cleef", "m", None, None, ["us"], [A],
  "He specialised in playing villains in westerns.", dead=True)
P("eli_wallach", "Eli Wallach", "m", None, None, ["us"], [A],
  "He also played a Mexican bandit leader in The Magnificent Seven.", dead=True)
P("henry_fonda", "Henry Fonda", "m", 1905, "grand_island", ["us"], [A],
  "Playing a cold-blooded killer in Once Upon a Time in the West was a sharp break from his usual heroic roles.", dead=True)
P("claudia_cardinale", "Claudia Cardinale", "f", 1938, "tunis", ["it"], [A],
  "She was born to Sicilian parents in Tunisia and also appeared in Fellini's 8½.")
P("charles_bronson", "Charles Bronson", "m", None, None, ["us"], [A],
  "He later starred in the Death Wish films and had also appeared in The Magnificent Seven.", dead=True)
P("robert_de_niro", "Robert De Niro", "m", 1943, "new_york_city", ["us"], [A],
  "He has made ten films with Martin Scorsese, and he won the Academy Award for Best Actor for Raging Bull.",
  aliases=["De Niro"])
P("marlon_brando", "Marlon Brando", "m", 1924, "omaha", ["us"], [A],
  "He also won the Academy Award for Best Actor for On the Waterfront. | He declined his Oscar for The Godfather in protest at Hollywood's treatment of Native Americans.",
  aliases=["Brando"], dead=True)
P("diane_keaton", "Diane Keaton", "f", 1946, "los_angeles", ["us"], [A],
  "She often worked with Woody Allen in the 1970s.")
P("martin_sheen", "Martin Sheen", "m", 1940, "dayton", ["us"], [A],
  "He suffered a heart attack during the difficult shoot of Apocalypse Now in the Philippines, and he later played the president in The West Wing.")
P("bill_murray", "Bill Murray", "m", 1950, None, ["us"], [A],
  "He became famous on Saturday Night Live and in comedies such as Ghostbusters.")
P("marcello_mastroianni", "Marcello Mastroianni", "m", None, None, ["it"], [A],
  "He was the leading Italian film star of his generation.", dead=True)
P("anita_ekberg", "Anita Ekberg", "f", 1931, "malmo", ["se"], [A],
  "She was a model and Miss Sweden before moving into films.", dead=True)
P("yalitza_aparicio", "Yalitza Aparicio", "f", None, None, ["mx"], [A],
  "She was a trained preschool teacher from Oaxaca with no acting experience before Roma, which earned her an Academy Award nomination.")
P("sandra_bullock", "Sandra Bullock", "f", 1964, "arlington_va", ["us"], [A],
  "She won the Academy Award for Best Actress for The Blind Side.")
P("george_clooney", "George Clooney", "m", 1961, "lexington_ky", ["us"], [A, "director"],
  "He first became famous on the television series ER.")
P("michael_keaton", "Michael Keaton", "m", None, None, ["us"], [A],
  "He played Batman in Tim Burton's films of 1989 and 1992, which made his casting in Birdman a knowing joke.")
P("emma_stone", "Emma Stone", "f", 1988, "scottsdale", ["us"], [A],
  "She later won a second Best Actress award for Poor Things.")
P("ivana_baquero", "Ivana Baquero", "f", None, None, ["es"], [A],
  "She was about eleven years old when she played Ofelia.")
P("sergi_lopez", "Sergi López", "m", None, None, ["es"], [A],
  "He is a Catalan actor who works often in French cinema.", aliases=["Sergi Lopez"])
P("sally_hawkins", "Sally Hawkins", "f", 1976, "london", ["uk"], [A],
  "She also played Mrs. Brown in the Paddington films.")
P("michael_shannon", "Michael Shannon", "m", None, None, ["us"], [A],
  "He often plays intense, menacing characters.")
P("ewan_mcgregor", "Ewan McGregor", "m", 1971, "perth_scotland", ["uk"], [A],
  "He played the young Obi-Wan Kenobi in the Star Wars prequel trilogy.")
P("david_bradley", "David Bradley", "m", None, None, ["uk"], [A],
  "He is known for playing Argus Filch in the Harry Potter films.")
P("tony_revolori", "Tony Revolori", "m", None, None, ["us"], [A],
  "He later appeared in the Spider-Man films.")
P("meryl_streep", "Meryl Streep", "f", 1949, None, ["us"], [A],
  "She holds the record for the most Academy Award acting nominations.")
P("harry_dean_stanton", "Harry Dean Stanton", "m", None, None, ["us"], [A],
  "He was a character actor whose career spanned more than six decades.", dead=True)
P("nastassja_kinski", "Nastassja Kinski", "f", 1961, "berlin", ["de"], [A],
  "She is the daughter of the actor Klaus Kinski.")
P("bruno_ganz", "Bruno Ganz", "m", None, None, ["ch"], [A],
  "He later played Adolf Hitler in Downfall.", dead=True)
P("chow_yun_fat", "Chow Yun-fat", "m", None, "hong_kong", [], [A],
  "He became famous in John Woo's Hong Kong action films.", aliases=["Chow Yun Fat"])
P("michelle_yeoh", "Michelle Yeoh", "f", 1962, "ipoh", ["my"], [A],
  "She rose to fame in Hong Kong action cinema, performing many of her own stunts.")
P("zhang_ziyi", "Zhang Ziyi", "f", 1979, "beijing", ["cn"], [A],
  "She later starred in House of Flying Daggers and Memoirs of a Geisha.")
P("jake_gyllenhaal", "Jake Gyllenhaal", "m", 1980, "los_angeles", ["us"], [A],
  "His sister Maggie Gyllenhaal is also an actor.")
P("suraj_sharma", "Suraj Sharma", "m", None, None, ["in"], [A],
  "He had no professional acting experience before he was cast as Pi.")
P("miles_teller", "Miles Teller", "m", None, None, ["us"], [A],
  "He studied acting at New York University's Tisch School of the Arts.")
P("jk_simmons", "J. K. Simmons", "m", 1955, None, ["us"], [A],
  "He is also widely known as the voice in a long-running series of insurance commercials and as J. Jonah Jameson in the Spider-Man films.",
  aliases=["J.K. Simmons", "JK Simmons"])
P("mahershala_ali", "Mahershala Ali", "m", 1974, "oakland", ["us"], [A],
  "He was the first Muslim actor to win an Academy Award.")
P("naomie_harris", "Naomie Harris", "f", 1976, "london", ["uk"], [A],
  "She plays Eve Moneypenny in the James Bond films.")
P("saoirse_ronan", "Saoirse Ronan", "f", 1994, "new_york_city", ["ie", "us"], [A],
  "She was born in New York to Irish parents and grew up in Ireland.")
P("laurie_metcalf", "Laurie Metcalf", "f", None, None, ["us"], [A],
  "She is also known for the sitcom Roseanne.")
P("florence_pugh", "Florence Pugh", "f", 1996, "oxford", ["uk"], [A],
  "She also starred in Midsommar.")
P("emma_watson", "Emma Watson", "f", 1990, "paris", ["uk"], [A],
  "She played Hermione Granger in the Harry Potter films.")
P("winona_ryder", "Winona Ryder", "f", 1971, "winona", ["us"], [A],
  "She is named after the Minnesota town where she was born.")
P("margot_robbie", "Margot Robbie", "f", 1990, "dalby", ["au"], [A, "producer"],
  "She also produced Barbie through her company LuckyChap Entertainment.")
P("america_ferrera", "America Ferrera", "f", None, None, ["us"], [A],
  "She starred in the television series Ugly Betty.")
P("frances_mcdormand", "Frances McDormand", "f", 1957, "gibson_city", ["us"], [A],
  "She also won the Academy Award for Best Actress for Three Billboards Outside Ebbing, Missouri.")
P("william_h_macy", "William H. Macy", "m", None, None, ["us"], [A],
  "He later starred in the television series Shameless.", aliases=["William H Macy"])
P("steve_buscemi", "Steve Buscemi", "m", None, None, ["us"], [A],
  "He has appeared in several films by the Coen brothers.")
P("javier_bardem", "Javier Bardem", "m", 1969, "las_palmas", ["es"], [A],
  "He is married to the Spanish actor Penélope Cruz.")
P("josh_brolin", "Josh Brolin", "m", 1968, "santa_monica", ["us"], [A],
  "He played the villain Thanos in the Avengers films.")
P("tommy_lee_jones", "Tommy Lee Jones", "m", None, None, ["us"], [A],
  "He won the Academy Award for Best Supporting Actor for The Fugitive.")
P("jeff_bridges", "Jeff Bridges", "m", 1949, "los_angeles", ["us"], [A],
  "He won the Academy Award for Best Actor for Crazy Heart.")
P("john_goodman", "John Goodman", "m", None, None, ["us"], [A],
  "He is also known for the sitcom Roseanne.")
P("elijah_wood", "Elijah Wood", "m", 1981, "cedar_rapids", ["us"], [A],
  "He was a child actor before being cast as Frodo.")
P("ian_mckellen", "Ian McKellen", "m", 1939, "burnley", ["uk"], [A],
  "He is also a celebrated Shakespearean stage actor and played Magneto in the X-Men films.", aliases=["Sir Ian McKellen"])
P("viggo_mortensen", "Viggo Mortensen", "m", 1958, "new_york_city", ["us", "dk"], [A],
  "He spent part of his childhood in Argentina and Denmark.")
P("song_kang_ho", "Song Kang-ho", "m", 1967, "gimhae", ["kr"], [A],
  "He is Bong Joon-ho's most frequent leading man.", aliases=["Song Kang Ho"])
P("choi_woo_shik", "Choi Woo-shik", "m", None, None, ["kr"], [A],
  "He also appeared in the zombie thriller Train to Busan.")
P("park_so_dam", "Park So-dam", "f", None, None, ["kr"], [A],
  "She later starred in the television series Itaewon Class.")
P("cho_yeo_jeong", "Cho Yeo-jeong", "f", None, None, ["kr"], [A],
  "She first became widely known for the period film The Servant.")
P("lee_sun_kyun", "Lee Sun-kyun", "m", None, None, ["kr"], [A],
  "He also starred in the television drama My Mister.", dead=True)
P("chris_evans", "Chris Evans", "m", 1981, "boston", ["us"], [A],
  "He is best known as Captain America in the Marvel films.")
P("tilda_swinton", "Tilda Swinton", "f", 1960, "london", ["uk"], [A],
  "She won the Academy Award for Best Supporting Actress for Michael Clayton.")
P("demi_moore", "Demi Moore", "f", 1962, "roswell", ["us"], [A],
  "She later starred in Ghost and A Few Good Men.")
P("choi_min_sik", "Choi Min-sik", "m", None, None, ["kr"], [A],
  "He also starred in Lady Vengeance and I Saw the Devil.")
P("harvey_keitel", "Harvey Keitel", "m", None, None, ["us"], [A],
  "He made his film debut in Martin Scorsese's Who's That Knocking at My Door.")
P("tim_roth", "Tim Roth", "m", None, None, ["uk"], [A],
  "He also appeared in Pulp Fiction and The Hateful Eight.")
P("john_travolta", "John Travolta", "m", 1954, "englewood", ["us"], [A],
  "He became a star in the 1970s with Saturday Night Fever and Grease.")
P("samuel_l_jackson", "Samuel L. Jackson", "m", 1948, "washington_dc", ["us"], [A],
  "He is one of the highest-grossing film actors of all time and has appeared in many Tarantino films.",
  aliases=["Samuel L Jackson", "Samuel Jackson"])
P("uma_thurman", "Uma Thurman", "f", 1970, "boston", ["us"], [A],
  "She later starred as the Bride in Tarantino's Kill Bill.")
P("bruce_willis", "Bruce Willis", "m", 1955, "idar_oberstein", ["us"], [A],
  "He was born in West Germany, where his father was serving as an American soldier, and became famous with Die Hard.")
P("brad_pitt", "Brad Pitt", "m", 1963, "shawnee", ["us"], [A, "producer"],
  "He grew up in Springfield, Missouri.")
P("christoph_waltz", "Christoph Waltz", "m", 1956, "vienna", ["at", "de"], [A],
  "He had worked mainly in German and Austrian television before Inglourious Basterds made him internationally famous.")
P("melanie_laurent", "Mélanie Laurent", "f", None, None, ["fr"], [A],
  "She is also a director.", aliases=["Melanie Laurent"])
P("jamie_foxx", "Jamie Foxx", "m", None, None, ["us"], [A],
  "He won the Academy Award for Best Actor for Ray.")
P("kurt_russell", "Kurt Russell", "m", 1951, "springfield_ma", ["us"], [A],
  "He starred in John Carpenter's Escape from New York and The Thing.")
P("jennifer_jason_leigh", "Jennifer Jason Leigh", "f", None, None, ["us"], [A],
  "Her performance in The Hateful Eight earned an Academy Award nomination.")
P("franco_nero", "Franco Nero", "m", None, None, ["it"], [A],
  "He made a brief cameo in Django Unchained.")
P("jodie_foster", "Jodie Foster", "f", 1962, "los_angeles", ["us"], [A, "director"],
  "She was twelve when she filmed Taxi Driver, and she later won two Academy Awards for Best Actress.")
P("cybill_shepherd", "Cybill Shepherd", "f", None, None, ["us"], [A],
  "She later starred in the television series Moonlighting.")
P("ray_liotta", "Ray Liotta", "m", 1954, "newark", ["us"], [A],
  "He also starred in Field of Dreams.", dead=True)
P("joe_pesci", "Joe Pesci", "m", 1943, "newark", ["us"], [A],
  "He also starred in the Home Alone films.")
P("jack_nicholson", "Jack Nicholson", "m", None, None, ["us"], [A],
  "He won three Academy Awards, including Best Actor for One Flew Over the Cuckoo's Nest.")
P("andy_lau", "Andy Lau", "m", 1961, "hong_kong", [], [A, "musician"],
  "He is also one of Hong Kong's most successful pop singers, one of the Four Heavenly Kings of Cantopop.")
P("tony_leung", "Tony Leung Chiu-wai", "m", 1962, "hong_kong", [], [A],
  "He won the Best Actor award at Cannes for In the Mood for Love.", aliases=["Tony Leung"])
P("maggie_cheung", "Maggie Cheung", "f", 1964, "hong_kong", [], [A],
  "She won the Best Actress award at Cannes for Clean.")
P("faye_wong", "Faye Wong", "f", 1969, "beijing", ["cn"], [A, "musician"],
  "She is one of the best-known singers in Chinese pop music.")
P("laurence_olivier", "Laurence Olivier", "m", 1907, "dorking", ["uk"], [A],
  "He was one of the great Shakespearean actors of the twentieth century.", dead=True)
P("joan_fontaine", "Joan Fontaine", "f", 1917, "tokyo", ["uk", "us"], [A],
  "She was born in Tokyo to British parents, and her older sister was the actor Olivia de Havilland.", dead=True)
P("judith_anderson", "Judith Anderson", "f", None, None, ["au"], [A],
  "She was a celebrated stage actor.", dead=True)
P("james_stewart", "James Stewart", "m", 1908, "indiana_pa", ["us"], [A],
  "He also starred in It's a Wonderful Life and Hitchcock's Rear Window.", aliases=["Jimmy Stewart"], dead=True)
P("kim_novak", "Kim Novak", "f", 1933, "chicago", ["us"], [A],
  "She was one of Columbia Pictures' biggest stars of the 1950s.")
P("anthony_perkins", "Anthony Perkins", "m", 1932, "new_york_city", ["us"], [A],
  "He played Norman Bates again in three sequels.", dead=True)
P("janet_leigh", "Janet Leigh", "f", 1927, "merced", ["us"], [A],
  "She also starred in Orson Welles's Touch of Evil.", dead=True)
P("vince_vaughn", "Vince Vaughn", "m", 1970, "minneapolis", ["us"], [A],
  "He is best known for comedies such as Wedding Crashers.")
P("anne_heche", "Anne Heche", "f", None, None, ["us"], [A],
  "She also starred in Six Days, Seven Nights.", dead=True)
P("julianne_moore", "Julianne Moore", "f", None, None, ["us"], [A],
  "She won the Academy Award for Best Actress for Still Alice.")
P("peter_sellers", "Peter Sellers", "m", None, None, ["uk"], [A],
  "He was also famous as Inspector Clouseau in the Pink Panther films.", dead=True)
P("george_c_scott", "George C. Scott", "m", None, None, ["us"], [A],
  "He later declined the Academy Award for Best Actor for Patton.", dead=True)
P("keir_dullea", "Keir Dullea", "m", None, None, ["us"], [A],
  "He returned as Dave Bowman in the sequel 2010.")
P("gary_lockwood", "Gary Lockwood", "m", None, None, ["us"], [A],
  "He also appeared in an early episode of Star Trek.")
P("malcolm_mcdowell", "Malcolm McDowell", "m", None, None, ["uk"], [A],
  "His first starring role was as a rebellious schoolboy in Lindsay Anderson's 1968 film If...., which went on to win the top prize at Cannes in 1969.")
P("shelley_duvall", "Shelley Duvall", "f", None, None, ["us"], [A],
  "She also played Olive Oyl in Popeye.", dead=True)
P("max_von_sydow", "Max von Sydow", "m", 1929, "lund", ["se", "fr"], [A],
  "He also played the exorcist Father Merrin in The Exorcist.", dead=True)
P("victor_sjostrom", "Victor Sjöström", "m", None, None, ["se"], [A, "director"],
  "He was himself a pioneering director of Swedish silent cinema.", aliases=["Victor Sjostrom"], dead=True)
P("humphrey_bogart", "Humphrey Bogart", "m", 1899, "new_york_city", ["us"], [A],
  "He won the Academy Award for Best Actor for The African Queen.", aliases=["Bogart", "Bogie"], dead=True)
P("ingrid_bergman", "Ingrid Bergman", "f", 1915, "stockholm", ["se"], [A],
  "She won three Academy Awards for acting. | She was not related to the director Ingmar Bergman, although she starred in his Autumn Sonata.",
  dead=True)
P("claude_rains", "Claude Rains", "m", None, None, ["uk", "us"], [A],
  "He played the title role in The Invisible Man.", dead=True)
P("jean_pierre_leaud", "Jean-Pierre Léaud", "m", 1944, "paris", ["fr"], [A],
  "He returned as Antoine Doinel in several later Truffaut films.", aliases=["Jean-Pierre Leaud"])
P("jean_paul_belmondo", "Jean-Paul Belmondo", "m", None, None, ["fr"], [A],
  "He became one of France's biggest stars of the 1960s and 1970s.", dead=True)
P("jean_seberg", "Jean Seberg", "f", 1938, "marshalltown", ["us"], [A],
  "She had first starred as Joan of Arc in Otto Preminger's Saint Joan.", dead=True)
P("richard_gere", "Richard Gere", "m", 1949, "philadelphia", ["us"], [A],
  "He later starred in Pretty Woman.")
P("tim_allen", "Tim Allen", "m", 1953, "denver", ["us"], [A],
  "He also starred in the sitcom Home Improvement.")
P("craig_t_nelson", "Craig T. Nelson", "m", None, None, ["us"], [A],
  "He also starred in the sitcom Coach.")
P("holly_hunter", "Holly Hunter", "f", None, None, ["us"], [A],
  "She won the Academy Award for Best Actress for The Piano.")
P("patton_oswalt", "Patton Oswalt", "m", None, None, ["us"], [A],
  "He is also a stand-up comedian.")
P("ed_asner", "Ed Asner", "m", None, None, ["us"], [A],
  "He was best known as Lou Grant on television.", dead=True)
P("amy_poehler", "Amy Poehler", "f", None, None, ["us"], [A],
  "She starred in the sitcom Parks and Recreation.")
P("phyllis_smith", "Phyllis Smith", "f", None, None, ["us"], [A],
  "She is known for the sitcom The Office.")
P("anthony_gonzalez", "Anthony Gonzalez", "m", None, None, ["us"], [A],
  "He was about twelve years old when he voiced Miguel.")
P("gael_garcia_bernal", "Gael García Bernal", "m", None, None, ["mx"], [A],
  "He starred in Alfonso Cuarón's Y Tu Mamá También.", aliases=["Gael Garcia Bernal"])
P("mike_myers", "Mike Myers", "m", 1963, "toronto", ["ca", "uk"], [A],
  "He created Wayne's World and the Austin Powers films.")
P("eddie_murphy", "Eddie Murphy", "m", 1961, "new_york_city", ["us"], [A],
  "He became famous on Saturday Night Live and in Beverly Hills Cop.")
P("cameron_diaz", "Cameron Diaz", "f", None, None, ["us"], [A],
  "She also starred in There's Something About Mary.")
P("matthew_broderick", "Matthew Broderick", "m", None, None, ["us"], [A],
  "He is best known for Ferris Bueller's Day Off.")
P("james_earl_jones", "James Earl Jones", "m", None, None, ["us"], [A],
  "His deep voice is also famous as that of Darth Vader in Star Wars.", dead=True)
P("jeremy_irons", "Jeremy Irons", "m", None, None, ["uk"], [A],
  "He won the Academy Award for Best Actor for Reversal of Fortune.")
P("donald_glover", "Donald Glover", "m", None, None, ["us"], [A, "musician"],
  "He also records music as Childish Gambino.")
P("beyonce", "Beyoncé", "f", None, None, ["us"], [A, "musician"],
  "She is one of the best-selling singers of her generation.", aliases=["Beyonce", "Beyoncé Knowles"])
P("chiwetel_ejiofor", "Chiwetel Ejiofor", "m", 1977, "london", ["uk"], [A],
  "His parents came to Britain from Nigeria.")
P("kristen_bell", "Kristen Bell", "f", None, None, ["us"], [A],
  "She also starred in the television series Veronica Mars.")
P("idina_menzel", "Idina Menzel", "f", None, None, ["us"], [A, "musician"],
  "She is a Broadway star who originated the role of Elphaba in Wicked.")
P("peter_sallis", "Peter Sallis", "m", None, None, ["uk"], [A],
  "He voiced Wallace for more than twenty-five years.", dead=True)
P("helena_bonham_carter", "Helena Bonham Carter", "f", None, None, ["uk"], [A],
  "She also played Bellatrix Lestrange in the Harry Potter films.")
P("gwyneth_paltrow", "Gwyneth Paltrow", "f", 1972, "los_angeles", ["us"], [A],
  "She also played Pepper Potts in the Iron Man films.")
P("colin_firth", "Colin Firth", "m", None, None, ["uk"], [A],
  "He is also remembered as Mr. Darcy in the 1995 television serial Pride and Prejudice.")
P("geoffrey_rush", "Geoffrey Rush", "m", None, None, ["au"], [A],
  "He won the Academy Award for Best Actor for Shine.")
P("lupita_nyongo", "Lupita Nyong'o", "f", 1983, "mexico_city", ["ke", "mx"], [A],
  "She was born in Mexico City to Kenyan parents and grew up mainly in Kenya.", aliases=["Lupita Nyongo"])
P("michael_fassbender", "Michael Fassbender", "m", None, None, ["de", "ie"], [A],
  "He was born in Germany and grew up in Ireland, and he has made several films with Steve McQueen.")
P("robin_wright", "Robin Wright", "f", None, None, ["us"], [A],
  "She also starred in The Princess Bride and the series House of Cards.")
P("gary_sinise", "Gary Sinise", "m", None, None, ["us"], [A],
  "He co-founded Chicago's Steppenwolf Theatre Company.")
P("ke_huy_quan", "Ke Huy Quan", "m", None, None, ["us"], [A],
  "As a child he played Short Round in Indiana Jones and the Temple of Doom.")
P("jamie_lee_curtis", "Jamie Lee Curtis", "f", 1958, "santa_monica", ["us"], [A],
  "She first became famous in John Carpenter's Halloween.")
P("james_nesbitt", "James Nesbitt", "m", None, None, ["uk"], [A],
  "He comes from Northern Ireland and is known for the television series Cold Feet.")
P("robert_pattinson", "Robert Pattinson", "m", 1986, "london", ["uk"], [A],
  "He first became famous in the Twilight films and later played Batman in The Batman.")
P("john_david_washington", "John David Washington", "m", 1984, "los_angeles", ["us"], [A],
  "He played professional American football before turning to acting, and his father is the actor Denzel Washington.")
P("fionn_whitehead", "Fionn Whitehead", "m", None, None, ["uk"], [A],
  "Dunkirk was his first feature film.")
P("kenneth_branagh", "Kenneth Branagh", "m", 1960, "belfast", ["uk"], [A, "director"],
  "He is also a director and won an Academy Award for the screenplay of Belfast, based on his childhood in the city.")
P("claire_foy", "Claire Foy", "f", None, None, ["uk"], [A],
  "She played Queen Elizabeth II in the series The Crown.")
P("james_woods", "James Woods", "m", None, None, ["us"], [A],
  "He is known for intense, fast-talking characters.")
P("karen_allen", "Karen Allen", "f", None, None, ["us"], [A],
  "She returned as Marion Ravenwood in Indiana Jones and the Kingdom of the Crystal Skull.")

# ---------------------------------------------------------------------------
# films
# ---------------------------------------------------------------------------
FILMS = {}


def F(fid, title, year, dirs, kind, blurb, studios=(), music=(), cast=(), country=("us",), ptitle=None,
      aliases=(), remake_of=None, prequel=None):
    if isinstance(dirs, str):
        dirs = [dirs]
    parsed = []
    for c in cast:
        aid, _, ch = c.partition(":")
        parsed.append((aid, ch or None))
    FILMS[fid] = dict(id=fid, name=title, year=year, dirs=list(dirs), kind=kind, blurb=blurb, studios=list(studios),
                      music=list(music), cast=parsed, country=list(country), ptitle=ptitle or title,
                      aliases=list(aliases), remake_of=remake_of, prequel=prequel)


NOLAN = "christopher_nolan"
# --- Christopher Nolan -------------------------------------------------------
F("following", "Following", 1998, NOLAN, "British neo-noir thriller",
  "Shot in black and white on weekends with a tiny budget, it follows an unemployed young writer who starts trailing strangers through London.",
  music=["david_julyan"], country=["uk"], ptitle="Following (film)")
F("memento", "Memento", 2000, NOLAN, "psychological thriller",
  "Its hero cannot form new memories, and the story is told largely in reverse order as he hunts for his wife's killer using notes, photographs and tattoos. | It grew out of the short story \"Memento Mori\" by Jonathan Nolan, the director's younger brother.",
  music=["david_julyan"], cast=["guy_pearce:Leonard Shelby", "carrie_anne_moss:Natalie", "joe_pantoliano:Teddy"],
  ptitle="Memento (film)")
F("insomnia_2002", "Insomnia", 2002, NOLAN, "psychological thriller",
  "It is a remake of the 1997 Norwegian film of the same name and moves the story to a small Alaskan town where the summer sun never sets.",
  studios=["warner_bros"], music=["david_julyan"],
  cast=["al_pacino:Will Dormer", "robin_williams:Walter Finch", "hilary_swank:Ellie Burr"],
  ptitle="Insomnia (2002 film)", remake_of="insomnia_1997")
F("insomnia_1997", "Insomnia", 1997, "erik_skjoldbjaerg", "Norwegian crime thriller",
  "A Swedish detective investigates a murder in northern Norway during the season of the midnight sun, and his growing sleeplessness clouds his judgement.",
  cast=["stellan_skarsgard:Jonas Engström"], country=["no"], ptitle="Insomnia (1997 film)")
F("batman_begins", "Batman Begins", 2005, NOLAN, "superhero film",
  "It retells the origin of Batman, showing how Bruce Wayne trains abroad before returning to fight crime in Gotham City.",
  studios=["warner_bros", "legendary"], music=["hans_zimmer", "james_newton_howard"],
  cast=["christian_bale:Bruce Wayne", "michael_caine:Alfred Pennyworth", "liam_neeson:Henri Ducard", "cillian_murphy:Jonathan Crane"],
  country=["us", "uk"])
F("the_prestige", "The Prestige", 2006, NOLAN, "mystery thriller",
  "Two rival stage magicians in Victorian London become obsessed with outdoing each other. | It is based on a novel by Christopher Priest.",
  studios=["touchstone_pictures", "warner_bros"], music=["david_julyan"],
  cast=["hugh_jackman:Robert Angier", "christian_bale:Alfred Borden", "michael_caine:Cutter", "scarlett_johansson:Olivia Wenscombe"],
  country=["us", "uk"], ptitle="The Prestige (film)")
F("the_illusionist", "The Illusionist", 2006, "neil_burger", "period mystery film",
  "Set in Vienna around 1900, it follows a stage magician who falls for a duchess promised to the crown prince. | It reached cinemas in the same year as The Prestige, another film about Victorian-era stage magic, and the two are often confused.",
  music=["philip_glass"], cast=["edward_norton:Eisenheim", "paul_giamatti:Chief Inspector Uhl"],
  ptitle="The Illusionist (2006 film)")
F("the_dark_knight", "The Dark Knight", 2008, NOLAN, "superhero film",
  "The sequel to Batman Begins pits Batman against the Joker, an anarchic criminal who tries to push Gotham City into chaos.",
  studios=["warner_bros", "legendary"], music=["hans_zimmer", "james_newton_howard"],
  cast=["christian_bale:Bruce Wayne", "heath_ledger:The Joker", "aaron_eckhart:Harvey Dent", "michael_caine:Alfred Pennyworth"],
  country=["us", "uk"], prequel="batman_begins")
F("inception", "Inception", 2010, NOLAN, "science fiction heist film",
  "A thief who steals corporate secrets by entering people's dreams is offered a chance to have his criminal record erased if he can plant an idea in a target's mind instead.",
  studios=["warner_bros", "legendary"], music=["hans_zimmer"],
  cast=["leonardo_dicaprio:Dom Cobb", "joseph_gordon_levitt:Arthur", "elliot_page:Ariadne", "tom_hardy:Eames", "marion_cotillard:Mal"],
  country=["us", "uk"])
F("the_dark_knight_rises", "The Dark Knight Rises", 2012, NOLAN, "superhero film",
  "It concludes Nolan's Batman trilogy, with Bruce Wayne coming out of retirement to face the masked revolutionary Bane.",
  studios=["warner_bros", "legendary"], music=["hans_zimmer"],
  cast=["christian_bale:Bruce Wayne", "tom_hardy:Bane", "anne_hathaway:Selina Kyle"], country=["us", "uk"],
  prequel="the_dark_knight")
F("interstellar", "Interstellar", 2014, NOLAN, "science fiction epic",
  "With crops failing across Earth, a former NASA pilot joins a mission through a wormhole near Saturn to search for a new home for humanity.",
  studios=["paramount_pictures", "warner_bros", "legendary"], music=["hans_zimmer"],
  cast=["matthew_mcconaughey:Joseph Cooper", "anne_hathaway:Amelia Brand", "jessica_chastain:Murph", "michael_caine:Professor Brand"],
  country=["us", "uk"])
F("dunkirk", "Dunkirk", 2017, NOLAN, "war film",
  "It depicts the 1940 evacuation of Allied soldiers from the beaches of Dunkirk in northern France, cutting between events on land, at sea and in the air.",
  studios=["warner_bros"], music=["hans_zimmer"],
  cast=["fionn_whitehead:Tommy", "tom_hardy:Farrier", "kenneth_branagh:Commander Bolton", "cillian_murphy:Shivering Soldier"],
  country=["uk", "us"], ptitle="Dunkirk (2017 film)")
F("tenet", "Tenet", 2020, NOLAN, "science fiction spy film",
  "A secret agent learns to use technology that makes people and objects move backwards through time in order to prevent a global catastrophe.",
  studios=["warner_bros"], music=["ludwig_goransson"],
  cast=["john_david_washington:The Protagonist", "robert_pattinson:Neil", "michael_caine:Michael Crosby"],
  country=["us", "uk"], ptitle="Tenet (film)")
F("oppenheimer", "Oppenheimer", 2023, NOLAN, "biographical drama",
  "It tells the story of J. Robert Oppenheimer, the physicist who led the Los Alamos laboratory during the Manhattan Project, and of the security hearing that later stripped him of his clearance.",
  studios=["universal_pictures"], music=["ludwig_goransson"],
  cast=["cillian_murphy:J. Robert Oppenheimer", "emily_blunt:Kitty Oppenheimer", "robert_downey_jr:Lewis Strauss", "matt_damon:Leslie Groves"],
  country=["us", "uk"], ptitle="Oppenheimer (film)")

# --- Denis Villeneuve, David Lynch -------------------------------------------
F("arrival", "Arrival", 2016, "denis_villeneuve", "science fiction drama",
  "A linguist is recruited by the US Army to communicate with aliens whose ships have appeared around the world, and learning their language changes the way she experiences time.",
  studios=["paramount_pictures"], music=["johann_johannsson"],
  cast=["amy_adams:Louise Banks", "jeremy_renner:Ian Donnelly"], ptitle="Arrival (film)")
F("blade_runner_2049", "Blade Runner 2049", 2017, "denis_villeneuve", "science fiction film",
  "Set thirty years after the original Blade Runner, it follows a replicant police officer whose discovery of a buried secret leads him to the long-missing Rick Deckard.",
  studios=["warner_bros"], music=["hans_zimmer", "benjamin_wallfisch"],
  cast=["ryan_gosling:K", "harrison_ford:Rick Deckard"], prequel="blade_runner")
F("dune_2021", "Dune", 2021, "denis_villeneuve", "science fiction epic",
  "Adapting the first half of Frank Herbert's 1965 novel, it follows young Paul Atreides after his noble family takes control of the desert planet Arrakis, the only source of the precious spice. | It is also known as Dune: Part One.",
  studios=["legendary", "warner_bros"], music=["hans_zimmer"],
  cast=["timothee_chalamet:Paul Atreides", "rebecca_ferguson:Lady Jessica", "oscar_isaac:Duke Leto Atreides", "stellan_skarsgard:Baron Vladimir Harkonnen", "zendaya:Chani"],
  ptitle="Dune (2021 film)", aliases=["Dune: Part One"])
F("dune_part_two", "Dune: Part Two", 2024, "denis_villeneuve", "science fiction epic",
  "It continues the story of the 2021 film, as Paul Atreides joins the Fremen of Arrakis and seeks revenge on House Harkonnen.",
  studios=["legendary", "warner_bros"], music=["hans_zimmer"],
  cast=["timothee_chalamet:Paul Atreides", "zendaya:Chani", "rebecca_ferguson:Lady Jessica"], prequel="dune_2021")
F("dune_1984", "Dune", 1984, "david_lynch", "science fiction film",
  "It was the first feature film adaptation of Frank Herbert's novel, produced by Dino De Laurentiis's company. | Poorly received on release, it later gained a cult following.",
  studios=["universal_pictures"], cast=["kyle_maclachlan:Paul Atreides"], ptitle="Dune (1984 film)")

# --- Ridley and Tony Scott ---------------------------------------------------
F("alien", "Alien", 1979, "ridley_scott", "science fiction horror film",
  "The crew of the commercial towing spaceship Nostromo answers a distress call and brings a deadly creature on board.",
  studios=["twentieth_century_fox"], music=["jerry_goldsmith"],
  cast=["sigourney_weaver:Ellen Ripley", "harry_dean_stanton:Brett"], country=["us", "uk"], ptitle="Alien (film)")
F("blade_runner", "Blade Runner", 1982, "ridley_scott", "science fiction film",
  "In a rain-soaked Los Angeles of 2019, a detective is ordered to hunt down rogue artificial humans called replicants. | It is loosely based on Philip K. Dick's novel Do Androids Dream of Electric Sheep?",
  studios=["warner_bros"], music=["vangelis"], cast=["harrison_ford:Rick Deckard", "rutger_hauer:Roy Batty"])
F("gladiator", "Gladiator", 2000, "ridley_scott", "historical epic",
  "A Roman general is betrayed by the emperor's son Commodus, sold into slavery, and rises through the gladiator arenas to take revenge.",
  studios=["dreamworks_pictures", "universal_pictures"], music=["hans_zimmer", "lisa_gerrard"],
  cast=["russell_crowe:Maximus", "joaquin_phoenix:Commodus"], country=["us", "uk"], ptitle="Gladiator (2000 film)")
F("top_gun", "Top Gun", 1986, "tony_scott", "action drama",
  "A hotshot naval aviator nicknamed Maverick trains at an elite fighter weapons school in San Diego.",
  studios=["paramount_pictures"], music=["harold_faltermeyer"], cast=["tom_cruise:Pete \"Maverick\" Mitchell"])
F("top_gun_maverick", "Top Gun: Maverick", 2022, "joseph_kosinski", "action drama",
  "The long-awaited sequel to Top Gun brings Pete Mitchell back to train a new generation of pilots for a dangerous mission. | It was directed by Joseph Kosinski rather than by Tony Scott, who had died in 2012.",
  studios=["paramount_pictures"],
  cast=["tom_cruise:Pete \"Maverick\" Mitchell", "miles_teller:Bradley \"Rooster\" Bradshaw"], prequel="top_gun")

# --- Steven Spielberg, George Lucas -------------------------------------------
SPIELBERG = "steven_spielberg"
F("jaws", "Jaws", 1975, SPIELBERG, "thriller",
  "A great white shark terrorises the beach town of Amity Island, and the police chief, a marine biologist and a shark hunter set out to kill it. | Often called the first summer blockbuster, it is based on Peter Benchley's novel.",
  studios=["universal_pictures"], music=["john_williams"],
  cast=["roy_scheider:Martin Brody", "robert_shaw:Quint", "richard_dreyfuss:Matt Hooper"], ptitle="Jaws (film)")
F("jaws_2", "Jaws 2", 1978, "jeannot_szwarc", "thriller",
  "Another great white shark threatens Amity Island, and Chief Brody must once again convince the town of the danger. | Steven Spielberg did not return to direct this sequel.",
  studios=["universal_pictures"], music=["john_williams"], cast=["roy_scheider:Martin Brody"], prequel="jaws")
F("raiders_of_the_lost_ark", "Raiders of the Lost Ark", 1981, SPIELBERG, "action-adventure film",
  "The archaeologist Indiana Jones races Nazi agents to find the Ark of the Covenant, in a story conceived by George Lucas.",
  studios=["paramount_pictures", "lucasfilm"], music=["john_williams"],
  cast=["harrison_ford:Indiana Jones", "karen_allen:Marion Ravenwood"])
F("et", "E.T. the Extra-Terrestrial", 1982, SPIELBERG, "science fiction family film",
  "A lonely boy in suburban California befriends an alien stranded on Earth and helps him contact his home planet.",
  studios=["universal_pictures"], music=["john_williams"],
  cast=["henry_thomas:Elliott", "drew_barrymore:Gertie"], aliases=["E.T."])
F("jurassic_park", "Jurassic Park", 1993, SPIELBERG, "science fiction adventure film",
  "Visitors to a theme park on a remote island, where dinosaurs have been recreated from ancient DNA, are stranded when the animals escape. | It is based on Michael Crichton's novel.",
  studios=["universal_pictures"], music=["john_williams"],
  cast=["sam_neill:Alan Grant", "laura_dern:Ellie Sattler", "jeff_goldblum:Ian Malcolm"], ptitle="Jurassic Park (film)")
F("schindlers_list", "Schindler's List", 1993, SPIELBERG, "historical drama",
  "Filmed mostly in black and white, it shows how the German industrialist Oskar Schindler saved more than a thousand Jewish refugees during the Holocaust by employing them in his factories.",
  studios=["universal_pictures"], music=["john_williams"],
  cast=["liam_neeson:Oskar Schindler", "ben_kingsley:Itzhak Stern", "ralph_fiennes:Amon Göth"])
F("saving_private_ryan", "Saving Private Ryan", 1998, SPIELBERG, "war film",
  "After the D-Day landings in Normandy, a squad of American soldiers is sent behind enemy lines to find a paratrooper whose three brothers have been killed.",
  studios=["dreamworks_pictures", "paramount_pictures"], music=["john_williams"],
  cast=["tom_hanks:Captain John H. Miller", "matt_damon:Private James Francis Ryan"])
F("star_wars", "Star Wars", 1977, "george_lucas", "space opera",
  "A farm boy named Luke Skywalker joins a rebellion against the Galactic Empire and helps rescue Princess Leia. | It was later retitled Star Wars: Episode IV – A New Hope.",
  studios=["twentieth_century_fox", "lucasfilm"], music=["john_williams"],
  cast=["mark_hamill:Luke Skywalker", "harrison_ford:Han Solo", "carrie_fisher:Princess Leia", "james_earl_jones:Darth Vader (voice)"],
  ptitle="Star Wars (1977 film)", aliases=["Star Wars: Episode IV – A New Hope", "A New Hope"])
F("american_graffiti", "American Graffiti", 1973, "george_lucas", "coming-of-age comedy",
  "Set over a single night in 1962, it follows a group of teenagers cruising the streets of a small California town to a soundtrack of rock and roll hits.",
  studios=["universal_pictures"], cast=["richard_dreyfuss:Curt Henderson", "ron_howard:Steve Bolander"])

# --- James Cameron and other Titanic films ------------------------------------
CAMERON = "james_cameron"
F("the_terminator", "The Terminator", 1984, CAMERON, "science fiction action film",
  "A cyborg assassin is sent back in time from 2029 to kill Sarah Connor, whose unborn son will one day lead the human resistance against the machines.",
  studios=["orion_pictures"], music=["brad_fiedel"],
  cast=["arnold_schwarzenegger:The Terminator", "linda_hamilton:Sarah Connor"])
F("titanic_1997", "Titanic", 1997, CAMERON, "epic romance and disaster film",
  "A young aristocrat and a poor artist fall in love aboard the RMS Titanic during its doomed maiden voyage in April 1912.",
  studios=["twentieth_century_fox", "paramount_pictures"], music=["james_horner"],
  cast=["leonardo_dicaprio:Jack Dawson", "kate_winslet:Rose DeWitt Bukater"], ptitle="Titanic (1997 film)")
F("titanic_1953", "Titanic", 1953, "jean_negulesco", "drama film",
  "An unhappily married couple travelling on the RMS Titanic quarrel over the future of their children as the liner heads for disaster. | It was made more than four decades before James Cameron's film of the same name.",
  studios=["twentieth_century_fox"], cast=["barbara_stanwyck:Julia Sturges", "clifton_webb:Richard Sturges"],
  ptitle="Titanic (1953 film)")
F("a_night_to_remember", "A Night to Remember", 1958, "roy_ward_baker", "British drama film",
  "Based on Walter Lord's book, it recreates the sinking of the Titanic in a restrained, almost documentary style.",
  studios=["rank_organisation"], cast=["kenneth_more:Charles Lightoller"], country=["uk"],
  ptitle="A Night to Remember (1958 film)")
F("avatar", "Avatar", 2009, CAMERON, "science fiction epic",
  "A paraplegic former Marine operates a genetically engineered body on the moon Pandora and comes to side with its native Na'vi people.",
  studios=["twentieth_century_fox"], music=["james_horner"],
  cast=["sam_worthington:Jake Sully", "zoe_saldana:Neytiri", "sigourney_weaver:Grace Augustine"], ptitle="Avatar (2009 film)")
F("the_hurt_locker", "The Hurt Locker", 2008, "kathryn_bigelow", "war thriller",
  "It follows a US Army bomb disposal team during the Iraq War and the reckless sergeant who joins it.",
  cast=["jeremy_renner:William James"])

# --- Studio Ghibli and Japanese animation -----------------------------------
MIYAZAKI = "hayao_miyazaki"
F("nausicaa", "Nausicaä of the Valley of the Wind", 1984, MIYAZAKI, "Japanese animated fantasy film",
  "In a world ravaged by war, a princess tries to keep the peace between human kingdoms and the giant insects of a toxic jungle. | It was made at the studio Topcraft before Studio Ghibli existed, and its success led to Ghibli's founding.",
  studios=["topcraft"], music=["joe_hisaishi"], country=["jp"], aliases=["Nausicaa of the Valley of the Wind", "Nausicaä"])
F("castle_in_the_sky", "Castle in the Sky", 1986, MIYAZAKI, "Japanese animated adventure film",
  "Two children search for Laputa, a legendary floating city, while being chased by air pirates and government agents. | It was the first feature released under the Studio Ghibli name.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["Laputa: Castle in the Sky"])
F("my_neighbor_totoro", "My Neighbor Totoro", 1988, MIYAZAKI, "Japanese animated fantasy film",
  "Two young sisters who move to the countryside with their father befriend Totoro, a large forest spirit who later became the studio's mascot. | It was first shown in Japanese cinemas as a double feature with Grave of the Fireflies.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["Totoro", "My Neighbour Totoro"])
F("grave_of_the_fireflies", "Grave of the Fireflies", 1988, "isao_takahata", "Japanese animated war drama",
  "Two orphaned siblings struggle to survive in Japan during the final months of the Second World War after their mother dies in a firebombing raid on Kobe.",
  studios=["studio_ghibli"], music=["michio_mamiya"], country=["jp"])
F("kikis_delivery_service", "Kiki's Delivery Service", 1989, MIYAZAKI, "Japanese animated fantasy film",
  "A thirteen-year-old witch moves to a seaside town for a year of independent training and starts a flying delivery business.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"])
F("porco_rosso", "Porco Rosso", 1992, MIYAZAKI, "Japanese animated adventure film",
  "A former Italian fighter ace, cursed to look like a pig, hunts air pirates over the Adriatic Sea in the years between the world wars.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"])
F("princess_mononoke", "Princess Mononoke", 1997, MIYAZAKI, "Japanese animated historical fantasy film",
  "A young prince cursed by a demon is drawn into a war between the gods of the forest and an iron-making town.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["Mononoke-hime"])
F("spirited_away", "Spirited Away", 2001, MIYAZAKI, "Japanese animated fantasy film",
  "A ten-year-old girl named Chihiro wanders into a world of spirits and must work in a bathhouse run by the witch Yubaba to rescue her parents, who have been turned into pigs.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["Sen to Chihiro no Kamikakushi"])
F("howls_moving_castle", "Howl's Moving Castle", 2004, MIYAZAKI, "Japanese animated fantasy film",
  "A young hat maker named Sophie is turned into an old woman by a curse and takes refuge in the walking castle of the wizard Howl. | It is adapted from a novel by the British author Diana Wynne Jones.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], ptitle="Howl's Moving Castle (film)")
F("ponyo", "Ponyo", 2008, MIYAZAKI, "Japanese animated fantasy film",
  "A goldfish princess who longs to become human befriends a five-year-old boy who lives in a house above the sea. | Its full Japanese title means Ponyo on the Cliff by the Sea.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["Ponyo on the Cliff by the Sea"])
F("the_wind_rises", "The Wind Rises", 2013, MIYAZAKI, "Japanese animated historical drama",
  "It offers a fictionalised portrait of Jiro Horikoshi, the engineer who designed Japanese fighter aircraft before and during the Second World War.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"])
F("the_boy_and_the_heron", "The Boy and the Heron", 2023, MIYAZAKI, "Japanese animated fantasy film",
  "After his mother dies during the Pacific War, a boy named Mahito follows a talking grey heron into a strange other world.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"], aliases=["How Do You Live?"])
F("tales_from_earthsea", "Tales from Earthsea", 2006, "goro_miyazaki", "Japanese animated fantasy film",
  "Loosely based on Ursula K. Le Guin's Earthsea books, it was the first feature directed by Goro Miyazaki, the son of Hayao Miyazaki.",
  studios=["studio_ghibli"], country=["jp"])
F("from_up_on_poppy_hill", "From Up on Poppy Hill", 2011, "goro_miyazaki", "Japanese animated drama",
  "Set in Yokohama in 1963, it follows two high school students who try to save their school's old clubhouse from demolition. | Hayao Miyazaki co-wrote the screenplay for his son.",
  studios=["studio_ghibli"], country=["jp"])
F("arrietty", "Arrietty", 2010, "hiromasa_yonebayashi", "Japanese animated fantasy film",
  "A tiny girl from a family of Borrowers, little people who secretly live under the floorboards of human houses, is seen by a sick boy. | It is based on Mary Norton's novel The Borrowers.",
  studios=["studio_ghibli"], music=["cecile_corbel"], country=["jp"], aliases=["The Secret World of Arrietty"])
F("mary_and_the_witchs_flower", "Mary and the Witch's Flower", 2017, "hiromasa_yonebayashi", "Japanese animated fantasy film",
  "A girl finds a rare flower that grants her magical powers for one night and is whisked away to a college of witchcraft. | It was the first feature from Studio Ponoc, a company set up by former Studio Ghibli staff.",
  studios=["studio_ponoc"], country=["jp"])
F("the_tale_of_the_princess_kaguya", "The Tale of the Princess Kaguya", 2013, "isao_takahata", "Japanese animated fantasy film",
  "Drawn in a delicate watercolour style, it adapts an old Japanese folktale about a girl found inside a stalk of bamboo. | It was Takahata's final film as director.",
  studios=["studio_ghibli"], music=["joe_hisaishi"], country=["jp"])

# --- Akira Kurosawa and his remakes ----------------------------------------
KUROSAWA = "akira_kurosawa"
F("rashomon", "Rashomon", 1950, KUROSAWA, "Japanese period crime drama",
  "The killing of a samurai in a forest is recounted by several witnesses whose versions contradict each other.",
  studios=["daiei"], music=["fumio_hayasaka"], cast=["toshiro_mifune:Tajōmaru", "machiko_kyo:Masako"],
  country=["jp"], ptitle="Rashomon (film)")
F("ikiru", "Ikiru", 1952, KUROSAWA, "Japanese drama film",
  "A Tokyo bureaucrat who learns that he has terminal stomach cancer searches for meaning in the months he has left and fights to build a children's playground.",
  studios=["toho"], music=["fumio_hayasaka"], cast=["takashi_shimura:Kanji Watanabe"], country=["jp"])
F("seven_samurai", "Seven Samurai", 1954, KUROSAWA, "Japanese epic samurai film",
  "Farmers in sixteenth-century Japan hire seven masterless samurai to defend their village from bandits who plan to steal the harvest.",
  studios=["toho"], music=["fumio_hayasaka"],
  cast=["toshiro_mifune:Kikuchiyo", "takashi_shimura:Kambei Shimada"], country=["jp"])
F("yojimbo", "Yojimbo", 1961, KUROSAWA, "Japanese samurai film",
  "A wandering ronin arrives in a town divided between two criminal gangs and plays them against each other.",
  studios=["toho"], music=["masaru_sato"], cast=["toshiro_mifune:Sanjuro"], country=["jp"])
F("ran", "Ran", 1985, KUROSAWA, "epic war drama",
  "A reworking of Shakespeare's King Lear, it follows an ageing warlord who divides his domain among his three sons, with disastrous results.",
  music=["toru_takemitsu"], cast=["tatsuya_nakadai:Hidetora Ichimonji"], country=["jp", "fr"], ptitle="Ran (film)")
F("the_magnificent_seven", "The Magnificent Seven", 1960, "john_sturges", "western",
  "It moves the story of Seven Samurai to the American West, with seven gunfighters hired to protect a Mexican village from bandits.",
  studios=["united_artists"], music=["elmer_bernstein"],
  cast=["yul_brynner:Chris Adams", "steve_mcqueen:Vin", "eli_wallach:Calvera", "charles_bronson:Bernardo O'Reilly"],
  ptitle="The Magnificent Seven (1960 film)", remake_of="seven_samurai")
F("a_fistful_of_dollars", "A Fistful of Dollars", 1964, "sergio_leone", "spaghetti western",
  "A nameless gunslinger plays two rival families against each other in a Mexican border town. | Its plot closely follows Kurosawa's Yojimbo, which led to a lawsuit.",
  music=["ennio_morricone"], cast=["clint_eastwood:The Man with No Name"], country=["it"], remake_of="yojimbo")
F("the_good_the_bad_and_the_ugly", "The Good, the Bad and the Ugly", 1966, "sergio_leone", "spaghetti western",
  "Three gunslingers compete to find a fortune in Confederate gold buried in a cemetery during the American Civil War.",
  studios=["united_artists"], music=["ennio_morricone"],
  cast=["clint_eastwood:Blondie", "lee_van_cleef:Angel Eyes", "eli_wallach:Tuco"], country=["it"])
F("once_upon_a_time_in_the_west", "Once Upon a Time in the West", 1968, "sergio_leone", "epic western",
  "A mysterious harmonica player, a widow and an outlaw are drawn into a fight over land that a railroad baron wants.",
  studios=["paramount_pictures"], music=["ennio_morricone"],
  cast=["henry_fonda:Frank", "claudia_cardinale:Jill McBain", "charles_bronson:Harmonica"], country=["it", "us"])
F("once_upon_a_time_in_america", "Once Upon a Time in America", 1984, "sergio_leone", "epic crime drama",
  "Spanning several decades, it follows a group of Jewish gangsters from New York's Lower East Side. | It was Leone's final film.",
  studios=["warner_bros"], music=["ennio_morricone"],
  cast=["robert_de_niro:David \"Noodles\" Aaronson", "james_woods:Max Bercovicz"], country=["it", "us"])

# --- The Coppolas, Fellini ----------------------------------------------------
COPPOLA = "francis_ford_coppola"
F("the_godfather", "The Godfather", 1972, COPPOLA, "crime drama",
  "Adapted from Mario Puzo's novel, it follows the Corleone crime family as power passes from the ageing Don Vito to his youngest son, Michael.",
  studios=["paramount_pictures"], music=["nino_rota"],
  cast=["marlon_brando:Vito Corleone", "al_pacino:Michael Corleone", "diane_keaton:Kay Adams"])
F("the_godfather_part_ii", "The Godfather Part II", 1974, COPPOLA, "crime drama",
  "It alternates between Michael Corleone's rule over the family in the late 1950s and the early life of his father, Vito, in Sicily and New York.",
  studios=["paramount_pictures"], music=["nino_rota", "carmine_coppola"],
  cast=["al_pacino:Michael Corleone", "robert_de_niro:Vito Corleone", "diane_keaton:Kay Adams"],
  prequel="the_godfather", aliases=["The Godfather: Part II"])
F("apocalypse_now", "Apocalypse Now", 1979, COPPOLA, "war film",
  "During the Vietnam War, an army captain travels upriver into Cambodia to assassinate a renegade colonel, in a story inspired by Joseph Conrad's Heart of Darkness.",
  studios=["united_artists", "american_zoetrope"], music=["carmine_coppola"],
  cast=["martin_sheen:Captain Benjamin Willard", "marlon_brando:Colonel Walter E. Kurtz"])
F("lost_in_translation", "Lost in Translation", 2003, "sofia_coppola", "comedy-drama",
  "A fading American film star and a young college graduate strike up an unlikely friendship while staying at the same hotel in Tokyo.",
  studios=["focus_features"], cast=["bill_murray:Bob Harris", "scarlett_johansson:Charlotte"], ptitle="Lost in Translation (film)")
FELLINI = "federico_fellini"
F("la_dolce_vita", "La Dolce Vita", 1960, FELLINI, "Italian comedy-drama",
  "A gossip journalist drifts through a week of parties and celebrity encounters in Rome. | The scene of Anita Ekberg wading into the Trevi Fountain became one of cinema's best-known images.",
  music=["nino_rota"], cast=["marcello_mastroianni:Marcello Rubini", "anita_ekberg:Sylvia"], country=["it"])
F("eight_and_a_half", "8½", 1963, FELLINI, "Italian comedy-drama",
  "A famous film director suffering from creative block retreats into memories and fantasies while his next production stalls.",
  music=["nino_rota"], cast=["marcello_mastroianni:Guido Anselmi", "claudia_cardinale:Claudia"], country=["it"],
  aliases=["Eight and a Half", "Otto e mezzo", "8 1/2"])
F("roma_1972", "Roma", 1972, FELLINI, "Italian comedy-drama",
  "A loosely structured portrait of Rome, it mixes Fellini's memories of arriving in the city as a young man with scenes of the city in the early 1970s. | It shares its title with Alfonso Cuarón's unrelated 2018 film.",
  music=["nino_rota"], country=["it"], ptitle="Roma (1972 film)", aliases=["Fellini's Roma"])

# --- Mexican directors --------------------------------------------------------
CUARON = "alfonso_cuaron"
F("roma_2018", "Roma", 2018, CUARON, "Mexican drama film",
  "Shot in black and white, it follows Cleo, a live-in housekeeper for a middle-class family in the Colonia Roma neighbourhood of Mexico City in the early 1970s. | Cuarón also served as its cinematographer.",
  studios=["netflix"], cast=["yalitza_aparicio:Cleo"], country=["mx"], ptitle="Roma (2018 film)")
F("gravity", "Gravity", 2013, CUARON, "science fiction thriller",
  "Two astronauts are left stranded in orbit after debris destroys their space shuttle.",
  studios=["warner_bros"], music=["steven_price"],
  cast=["sandra_bullock:Ryan Stone", "george_clooney:Matt Kowalski"], country=["us", "uk"], ptitle="Gravity (2013 film)")
INARRITU = "alejandro_gonzalez_inarritu"
F("birdman", "Birdman", 2014, INARRITU, "black comedy-drama",
  "A washed-up actor famous for playing a superhero tries to revive his career with a Broadway play. | The film is edited to look like one continuous shot.",
  studios=["fox_searchlight"], music=["antonio_sanchez"],
  cast=["michael_keaton:Riggan Thomson", "edward_norton:Mike Shiner", "emma_stone:Sam Thomson"],
  ptitle="Birdman (film)", aliases=["Birdman or (The Unexpected Virtue of Ignorance)"])
F("the_revenant", "The Revenant", 2015, INARRITU, "western survival drama",
  "On the American frontier of the 1820s, a fur trapper mauled by a bear and left for dead by his companions struggles across the wilderness to take revenge.",
  studios=["twentieth_century_fox"], music=["ryuichi_sakamoto", "alva_noto"],
  cast=["leonardo_dicaprio:Hugh Glass", "tom_hardy:John Fitzgerald"], ptitle="The Revenant (2015 film)")
DELTORO = "guillermo_del_toro"
F("pans_labyrinth", "Pan's Labyrinth", 2006, DELTORO, "Spanish-language dark fantasy film",
  "In Francoist Spain in 1944, a young girl living with her cruel stepfather, an army captain, escapes into a mythical world guarded by a faun.",
  music=["javier_navarrete"], cast=["ivana_baquero:Ofelia", "sergi_lopez:Captain Vidal"], country=["mx", "es"],
  aliases=["El laberinto del fauno"])
F("the_shape_of_water", "The Shape of Water", 2017, DELTORO, "romantic fantasy film",
  "In a Baltimore government laboratory during the Cold War, a mute cleaning woman falls in love with a captured amphibious creature.",
  studios=["fox_searchlight"], music=["alexandre_desplat"],
  cast=["sally_hawkins:Elisa Esposito", "michael_shannon:Richard Strickland"])
F("gdt_pinocchio", "Guillermo del Toro's Pinocchio", 2022, [DELTORO, "mark_gustafson"], "stop-motion animated musical fantasy film",
  "This version of Carlo Collodi's story moves the wooden boy's adventures to Fascist Italy between the world wars.",
  studios=["netflix"], music=["alexandre_desplat"],
  cast=["ewan_mcgregor:Sebastian J. Cricket", "david_bradley:Geppetto"], country=["us", "mx"])
F("pinocchio_1940", "Pinocchio", 1940, ["ben_sharpsteen", "hamilton_luske"], "animated musical fantasy film",
  "Produced by Walt Disney as his studio's second animated feature, it tells of a wooden puppet who wants to become a real boy. | Its song \"When You Wish Upon a Star\" became the Disney company's signature tune.",
  music=["leigh_harline"], ptitle="Pinocchio (1940 film)")
F("pinocchio_2022", "Pinocchio", 2022, "robert_zemeckis", "live-action and computer-animated musical fantasy film",
  "A remake of Disney's 1940 animated film, it went straight to the Disney+ streaming service in September 2022, a few months before Guillermo del Toro's version of the story.",
  studios=["walt_disney_pictures"], music=["alan_silvestri"], cast=["tom_hanks:Geppetto"],
  ptitle="Pinocchio (2022 film)", remake_of="pinocchio_1940")

# --- Wes Anderson, Wim Wenders, Ang Lee ------------------------------------
F("the_grand_budapest_hotel", "The Grand Budapest Hotel", 2014, "wes_anderson", "comedy-drama",
  "The concierge of a grand hotel in a fictional European republic and his young lobby boy are caught up in the theft of a priceless Renaissance painting between the world wars.",
  studios=["fox_searchlight"], music=["alexandre_desplat"],
  cast=["ralph_fiennes:M. Gustave", "tony_revolori:Zero Moustafa"], country=["us", "de"])
F("fantastic_mr_fox", "Fantastic Mr. Fox", 2009, "wes_anderson", "stop-motion animated comedy",
  "Based on Roald Dahl's children's book, it follows a fox who cannot resist raiding the farms of three wealthy farmers.",
  studios=["twentieth_century_fox"], music=["alexandre_desplat"],
  cast=["george_clooney:Mr. Fox", "meryl_streep:Mrs. Fox"])
F("paris_texas_film", "Paris, Texas", 1984, "wim_wenders", "road drama",
  "A man who has been missing for four years wanders out of the Texas desert and sets out to reunite with his young son and his estranged wife.",
  music=["ry_cooder"], cast=["harry_dean_stanton:Travis Henderson", "nastassja_kinski:Jane Henderson"],
  country=["de", "fr"], ptitle="Paris, Texas (film)")
F("wings_of_desire", "Wings of Desire", 1987, "wim_wenders", "fantasy drama",
  "Invisible angels watch over the people of divided Berlin, and one of them longs to become human after falling for a trapeze artist.",
  cast=["bruno_ganz:Damiel"], country=["de", "fr"])
ANGLEE = "ang_lee"
F("crouching_tiger", "Crouching Tiger, Hidden Dragon", 2000, ANGLEE, "wuxia martial arts film",
  "Two master warriors search for a stolen legendary sword, the Green Destiny, whose theft is tied to a young aristocrat secretly trained in martial arts.",
  studios=["sony_pictures_classics"], music=["tan_dun"],
  cast=["chow_yun_fat:Li Mu Bai", "michelle_yeoh:Yu Shu Lien", "zhang_ziyi:Jen Yu"], country=["tw", "cn", "us"])
F("brokeback_mountain", "Brokeback Mountain", 2005, ANGLEE, "romantic drama",
  "Two young men who meet while herding sheep in Wyoming in 1963 begin a relationship that shapes the next twenty years of their lives.",
  studios=["focus_features"], music=["gustavo_santaolalla"],
  cast=["heath_ledger:Ennis Del Mar", "jake_gyllenhaal:Jack Twist"])
F("life_of_pi", "Life of Pi", 2012, ANGLEE, "adventure drama",
  "After a shipwreck, an Indian teenager survives for months on a lifeboat in the Pacific Ocean alongside a Bengal tiger named Richard Parker. | It is based on Yann Martel's novel.",
  studios=["twentieth_century_fox"], music=["mychael_danna"], cast=["suraj_sharma:Pi Patel"], ptitle="Life of Pi (film)")

# --- Damien Chazelle, Barry Jenkins, Greta Gerwig ----------------------------
CHAZELLE = "damien_chazelle"
F("whiplash", "Whiplash", 2014, CHAZELLE, "drama film",
  "An ambitious young jazz drummer at a Manhattan music conservatory is pushed to his limits by an abusive instructor.",
  studios=["sony_pictures_classics"], music=["justin_hurwitz"],
  cast=["miles_teller:Andrew Neiman", "jk_simmons:Terence Fletcher"], ptitle="Whiplash (2014 film)")
F("la_la_land", "La La Land", 2016, CHAZELLE, "musical romantic comedy-drama",
  "A jazz pianist and an aspiring actress fall in love while chasing their dreams in Los Angeles.",
  studios=["lionsgate"], music=["justin_hurwitz"], cast=["ryan_gosling:Sebastian Wilder", "emma_stone:Mia Dolan"])
F("first_man", "First Man", 2018, CHAZELLE, "biographical drama",
  "It follows the astronaut Neil Armstrong through the years leading up to the Apollo 11 Moon landing in 1969.",
  studios=["universal_pictures"], music=["justin_hurwitz"],
  cast=["ryan_gosling:Neil Armstrong", "claire_foy:Janet Armstrong"], ptitle="First Man (film)")
F("moonlight", "Moonlight", 2016, "barry_jenkins", "coming-of-age drama",
  "Told in three chapters, it follows a young Black man growing up in Miami as he comes to terms with his identity. | Its Best Picture win was announced only after presenters had mistakenly read out La La Land, one of the most famous mix-ups in Academy Awards history.",
  studios=["a24"], music=["nicholas_britell"], cast=["mahershala_ali:Juan", "naomie_harris:Paula"],
  ptitle="Moonlight (2016 film)")
GERWIG = "greta_gerwig"
F("lady_bird", "Lady Bird", 2017, GERWIG, "coming-of-age comedy-drama",
  "A strong-willed high school senior in Sacramento clashes with her mother as she dreams of going to college on the East Coast.",
  studios=["a24"], music=["jon_brion"],
  cast=["saoirse_ronan:Christine \"Lady Bird\" McPherson", "laurie_metcalf:Marion McPherson"], ptitle="Lady Bird (film)")
F("little_women_2019", "Little Women", 2019, GERWIG, "coming-of-age period drama",
  "Adapted from Louisa May Alcott's novel, it follows the four March sisters in Massachusetts, jumping back and forth between their childhood and adult lives.",
  studios=["columbia_pictures"], music=["alexandre_desplat"],
  cast=["saoirse_ronan:Jo March", "emma_watson:Meg March", "florence_pugh:Amy March", "timothee_chalamet:Theodore \"Laurie\" Laurence"],
  ptitle="Little Women (2019 film)")
F("little_women_1994", "Little Women", 1994, "gillian_armstrong", "period drama",
  "It is an earlier adaptation of Louisa May Alcott's novel about the March sisters, made a quarter of a century before Greta Gerwig's version.",
  studios=["columbia_pictures"], music=["thomas_newman"],
  cast=["winona_ryder:Jo March", "christian_bale:Theodore \"Laurie\" Laurence"], ptitle="Little Women (1994 film)")
F("barbie", "Barbie", 2023, GERWIG, "fantasy comedy",
  "Barbie leaves the pastel perfection of Barbieland for the real world after she starts having unexpected thoughts about death. | It opened in July 2023 on the same day as Oppenheimer, and the double bill became known as Barbenheimer.",
  studios=["warner_bros"], music=["mark_ronson", "andrew_wyatt"],
  cast=["margot_robbie:Barbie", "ryan_gosling:Ken", "america_ferrera:Gloria"], ptitle="Barbie (film)")

# --- The Coen brothers, Peter Jackson ----------------------------------------
COENS = ["joel_coen", "ethan_coen"]
F("fargo", "Fargo", 1996, COENS, "crime thriller",
  "A pregnant police chief investigates a string of roadside murders in snowy Minnesota after a car salesman arranges for his own wife to be kidnapped. | Although it is named after the city in North Dakota, most of the story takes place in Minnesota.",
  studios=["working_title"], music=["carter_burwell"],
  cast=["frances_mcdormand:Marge Gunderson", "william_h_macy:Jerry Lundegaard", "steve_buscemi:Carl Showalter"],
  ptitle="Fargo (film)")
F("the_big_lebowski", "The Big Lebowski", 1998, COENS, "comedy",
  "A laid-back Los Angeles slacker known as the Dude is mistaken for a millionaire with the same name and drawn into a kidnapping scheme.",
  studios=["working_title"], music=["carter_burwell"],
  cast=["jeff_bridges:Jeffrey \"The Dude\" Lebowski", "john_goodman:Walter Sobchak", "steve_buscemi:Donny"])
F("no_country_for_old_men", "No Country for Old Men", 2007, COENS, "neo-western crime thriller",
  "A hunter in West Texas takes a satchel of money he finds at the scene of a drug deal gone wrong, and a relentless hitman follows him. | It is based on Cormac McCarthy's novel.",
  studios=["miramax", "paramount_vantage"], music=["carter_burwell"],
  cast=["tommy_lee_jones:Ed Tom Bell", "javier_bardem:Anton Chigurh", "josh_brolin:Llewelyn Moss"])
JACKSON = "peter_jackson"
F("lotr_fellowship", "The Lord of the Rings: The Fellowship of the Ring", 2001, JACKSON, "epic fantasy film",
  "The first part of Jackson's adaptation of J. R. R. Tolkien's novel follows the hobbit Frodo Baggins as he leaves the Shire to destroy the One Ring. | It was filmed in New Zealand together with its two sequels.",
  studios=["new_line_cinema"], music=["howard_shore"],
  cast=["elijah_wood:Frodo Baggins", "ian_mckellen:Gandalf", "viggo_mortensen:Aragorn"], country=["nz", "us"],
  aliases=["The Fellowship of the Ring"])
F("lotr_return_of_the_king", "The Lord of the Rings: The Return of the King", 2003, JACKSON, "epic fantasy film",
  "The final part of the trilogy shows Frodo's last push toward Mount Doom while Aragorn leads the armies of the West. | Its eleven Academy Awards equalled the record held by Ben-Hur and Titanic.",
  studios=["new_line_cinema"], music=["howard_shore"],
  cast=["elijah_wood:Frodo Baggins", "ian_mckellen:Gandalf", "viggo_mortensen:Aragorn"], country=["nz", "us"],
  aliases=["The Return of the King"])
F("lotr_1978", "The Lord of the Rings", 1978, "ralph_bakshi", "animated fantasy film",
  "Made partly with rotoscoping, this animated version covers roughly the first half of Tolkien's story and ends before its climax. | It is a separate film from Peter Jackson's later live-action trilogy.",
  studios=["united_artists"], music=["leonard_rosenman"], ptitle="The Lord of the Rings (1978 film)")

# --- Korean cinema -----------------------------------------------------------
BONG = "bong_joon_ho"
F("memories_of_murder", "Memories of Murder", 2003, BONG, "South Korean crime thriller",
  "Two detectives in rural South Korea in the 1980s hunt a serial killer, in a story based on the real Hwaseong murders.",
  studios=["cj_entertainment"], cast=["song_kang_ho:Park Doo-man"], country=["kr"])
F("the_host", "The Host", 2006, BONG, "South Korean monster film",
  "A mutated creature emerges from Seoul's Han River and carries off a young girl, whose family sets out to rescue her.",
  cast=["song_kang_ho:Park Gang-du"], country=["kr"], ptitle="The Host (2006 film)")
F("snowpiercer", "Snowpiercer", 2013, BONG, "science fiction action film",
  "After a failed climate experiment freezes the planet, the last survivors live aboard a train that circles the globe, with the poor confined to the rear cars.",
  cast=["chris_evans:Curtis Everett", "tilda_swinton:Mason", "song_kang_ho:Namgoong Minsoo"], country=["kr"])
F("parasite_2019", "Parasite", 2019, BONG, "South Korean black comedy thriller",
  "The members of a poor family in Seoul talk their way, one by one, into jobs in the household of a wealthy family, with unexpected consequences. | It was the first film not in English to win the Academy Award for Best Picture.",
  studios=["cj_entertainment"], music=["jung_jae_il"],
  cast=["song_kang_ho:Kim Ki-taek", "choi_woo_shik:Kim Ki-woo", "park_so_dam:Kim Ki-jung", "cho_yeo_jeong:Choi Yeon-gyo", "lee_sun_kyun:Park Dong-ik"],
  country=["kr"], ptitle="Parasite (2019 film)", aliases=["Gisaengchung"])
F("parasite_1982", "Parasite", 1982, "charles_band", "science fiction horror film",
  "In a bleak post-apocalyptic future, a scientist carries inside his body a deadly parasite he helped create. | It was originally shown in 3D and gave Demi Moore one of her first film roles.",
  cast=["demi_moore:Patricia Welles"], ptitle="Parasite (1982 film)")
F("oldboy_2003", "Oldboy", 2003, "park_chan_wook", "South Korean neo-noir action thriller",
  "A man is locked in a private cell for fifteen years without explanation and, once released, has five days to find out who imprisoned him and why.",
  cast=["choi_min_sik:Oh Dae-su"], country=["kr"], ptitle="Oldboy (2003 film)")
F("oldboy_2013", "Oldboy", 2013, "spike_lee", "American neo-noir thriller",
  "An English-language remake of Park Chan-wook's 2003 film, it stars Josh Brolin as a man held captive for twenty years.",
  cast=["josh_brolin:Joe Doucett"], ptitle="Oldboy (2013 film)", remake_of="oldboy_2003")

# --- Quentin Tarantino and Sergio Corbucci ----------------------------------
QT = "quentin_tarantino"
F("reservoir_dogs", "Reservoir Dogs", 1992, QT, "crime film",
  "After a jewellery heist goes wrong, the surviving robbers, who know each other only by colour-coded aliases, suspect that one of them is a police informant. | It was Tarantino's first feature as director.",
  studios=["miramax"], cast=["harvey_keitel:Mr. White", "tim_roth:Mr. Orange", "steve_buscemi:Mr. Pink"])
F("pulp_fiction", "Pulp Fiction", 1994, QT, "crime film",
  "Told out of chronological order, it weaves together the stories of two hitmen, a boxer who refuses to throw a fight, a gangster's wife and a pair of diner robbers in Los Angeles.",
  studios=["miramax"],
  cast=["john_travolta:Vincent Vega", "samuel_l_jackson:Jules Winnfield", "uma_thurman:Mia Wallace", "bruce_willis:Butch Coolidge", "tim_roth:Pumpkin"])
F("inglourious_basterds", "Inglourious Basterds", 2009, QT, "war film",
  "In an alternate history of Nazi-occupied France, a band of Jewish-American soldiers and a Jewish cinema owner separately plot to kill the Nazi leadership at a film premiere.",
  studios=["universal_pictures", "weinstein_company"],
  cast=["brad_pitt:Aldo Raine", "christoph_waltz:Hans Landa", "melanie_laurent:Shosanna Dreyfus"])
F("django_unchained", "Django Unchained", 2012, QT, "revisionist western",
  "A freed slave teams up with a German bounty hunter to rescue his wife from a brutal Mississippi plantation owner. | Its title nods to Sergio Corbucci's 1966 western Django, whose star Franco Nero makes a cameo.",
  studios=["weinstein_company", "columbia_pictures"],
  cast=["jamie_foxx:Django Freeman", "christoph_waltz:King Schultz", "leonardo_dicaprio:Calvin Candie", "samuel_l_jackson:Stephen"])
F("the_hateful_eight", "The Hateful Eight", 2015, QT, "western mystery film",
  "During a Wyoming blizzard, a bounty hunter, his prisoner and a group of strangers shelter at a stagecoach lodge where nobody is quite who they seem.",
  studios=["weinstein_company"], music=["ennio_morricone"],
  cast=["samuel_l_jackson:Major Marquis Warren", "kurt_russell:John Ruth", "jennifer_jason_leigh:Daisy Domergue", "tim_roth:Oswaldo Mobray"])
F("once_upon_a_time_in_hollywood", "Once Upon a Time in Hollywood", 2019, QT, "comedy-drama",
  "In Los Angeles in 1969, a fading television actor and his stunt double drift through a changing film industry while the Manson Family lurks nearby.",
  studios=["columbia_pictures"],
  cast=["leonardo_dicaprio:Rick Dalton", "brad_pitt:Cliff Booth", "margot_robbie:Sharon Tate"], country=["us", "uk"])
F("django_1966", "Django", 1966, "sergio_corbucci", "spaghetti western",
  "A mysterious drifter who drags a coffin behind him arrives in a muddy border town caught between a gang of former Confederates and Mexican revolutionaries.",
  music=["luis_bacalov"], cast=["franco_nero:Django"], country=["it"], ptitle="Django (1966 film)")

# --- Martin Scorsese and Infernal Affairs ----------------------------------
SCORSESE = "martin_scorsese"
F("taxi_driver", "Taxi Driver", 1976, SCORSESE, "psychological drama",
  "A lonely, sleepless Vietnam veteran working as a night-shift taxi driver in New York City grows increasingly unstable.",
  studios=["columbia_pictures"], music=["bernard_herrmann"],
  cast=["robert_de_niro:Travis Bickle", "jodie_foster:Iris", "cybill_shepherd:Betsy", "harvey_keitel:Sport"])
F("goodfellas", "Goodfellas", 1990, SCORSESE, "crime film",
  "Based on a true story, it follows Henry Hill's rise and fall in the New York Mafia over three decades.",
  studios=["warner_bros"],
  cast=["ray_liotta:Henry Hill", "robert_de_niro:Jimmy Conway", "joe_pesci:Tommy DeVito"])
F("the_departed", "The Departed", 2006, SCORSESE, "crime thriller",
  "Set in Boston, it follows an undercover police officer inside an Irish mob and a mob mole inside the state police, each trying to expose the other. | It is a remake of the 2002 Hong Kong film Infernal Affairs.",
  studios=["warner_bros"], music=["howard_shore"],
  cast=["leonardo_dicaprio:Billy Costigan", "matt_damon:Colin Sullivan", "jack_nicholson:Frank Costello"],
  remake_of="infernal_affairs")
F("infernal_affairs", "Infernal Affairs", 2002, ["andrew_lau", "alan_mak"], "Hong Kong crime thriller",
  "A police officer goes undercover in a triad gang while a triad member infiltrates the police force, and each side tries to unmask the other's mole.",
  cast=["andy_lau:Lau Kin-ming", "tony_leung:Chan Wing-yan"], country=[])

# --- Alfred Hitchcock, Stanley Kubrick ---------------------------------------
HITCH = "alfred_hitchcock"
F("rebecca", "Rebecca", 1940, HITCH, "psychological thriller",
  "A young bride moves to her wealthy husband's Cornish estate, Manderley, and finds herself haunted by the memory of his first wife. | It was Hitchcock's first American film, produced by David O. Selznick.",
  studios=["selznick_international"], music=["franz_waxman"],
  cast=["laurence_olivier:Maxim de Winter", "joan_fontaine:Mrs. de Winter", "judith_anderson:Mrs. Danvers"],
  ptitle="Rebecca (1940 film)")
F("vertigo", "Vertigo", 1958, HITCH, "psychological thriller",
  "A retired San Francisco detective with a fear of heights is hired to follow an old friend's wife and becomes obsessed with her.",
  studios=["paramount_pictures"], music=["bernard_herrmann"],
  cast=["james_stewart:John \"Scottie\" Ferguson", "kim_novak:Madeleine Elster"], ptitle="Vertigo (film)")
F("psycho_1960", "Psycho", 1960, HITCH, "horror thriller",
  "A secretary on the run with stolen money checks into the isolated Bates Motel, run by a young man dominated by his mother. | Its shower scene and Bernard Herrmann's shrieking strings became famous.",
  studios=["paramount_pictures"], music=["bernard_herrmann"],
  cast=["anthony_perkins:Norman Bates", "janet_leigh:Marion Crane"], ptitle="Psycho (1960 film)")
F("psycho_1998", "Psycho", 1998, "gus_van_sant", "horror thriller",
  "Gus Van Sant's colour remake copies Hitchcock's original almost shot for shot.",
  studios=["universal_pictures"],
  cast=["vince_vaughn:Norman Bates", "anne_heche:Marion Crane", "julianne_moore:Lila Crane"],
  ptitle="Psycho (1998 film)", remake_of="psycho_1960")
KUBRICK = "stanley_kubrick"
F("dr_strangelove", "Dr. Strangelove", 1964, KUBRICK, "black comedy",
  "A deranged American general orders a nuclear attack on the Soviet Union, and the president and his advisers scramble to stop it. | Peter Sellers plays three different roles.",
  studios=["columbia_pictures"],
  cast=["peter_sellers:Dr. Strangelove", "george_c_scott:General Buck Turgidson"], country=["uk", "us"],
  aliases=["Dr. Strangelove or: How I Learned to Stop Worrying and Love the Bomb"])
F("two_thousand_one", "2001: A Space Odyssey", 1968, KUBRICK, "science fiction film",
  "From prehistoric apes to a mission to Jupiter, it traces humanity's encounters with mysterious black monoliths, and pits two astronauts against their ship's computer, HAL 9000. | Kubrick wrote the screenplay with Arthur C. Clarke.",
  studios=["mgm"], cast=["keir_dullea:David Bowman", "gary_lockwood:Frank Poole"], country=["uk", "us"],
  aliases=["2001"])
F("a_clockwork_orange", "A Clockwork Orange", 1971, KUBRICK, "dystopian crime film",
  "A violent young gang leader in near-future Britain undergoes an experimental treatment meant to cure him of his criminal impulses. | It is adapted from Anthony Burgess's novel.",
  studios=["warner_bros"], music=["wendy_carlos"], cast=["malcolm_mcdowell:Alex"], country=["uk", "us"],
  ptitle="A Clockwork Orange (film)")
F("the_shining", "The Shining", 1980, KUBRICK, "psychological horror film",
  "A writer takes a job as winter caretaker of the isolated Overlook Hotel in Colorado, where he slowly turns on his wife and young son. | It is based on Stephen King's novel.",
  studios=["warner_bros"], music=["wendy_carlos", "rachel_elkind"],
  cast=["jack_nicholson:Jack Torrance", "shelley_duvall:Wendy Torrance"], country=["uk", "us"], ptitle="The Shining (film)")

# --- Bergman, Curtiz, Ray, the French New Wave, Wong Kar-wai -------------------
BERGMAN = "ingmar_bergman"
F("the_seventh_seal", "The Seventh Seal", 1957, BERGMAN, "Swedish historical fantasy film",
  "A knight returning from the Crusades to a Sweden ravaged by the Black Death challenges Death to a game of chess.",
  studios=["svensk_filmindustri"], cast=["max_von_sydow:Antonius Block"], country=["se"])
F("wild_strawberries", "Wild Strawberries", 1957, BERGMAN, "Swedish drama film",
  "An elderly professor driving to Lund to receive an honorary degree revisits memories of his youth along the way.",
  studios=["svensk_filmindustri"], cast=["victor_sjostrom:Isak Borg"], country=["se"], ptitle="Wild Strawberries (film)")
F("fanny_and_alexander", "Fanny and Alexander", 1982, BERGMAN, "Swedish period drama",
  "Seen through the eyes of two children in a wealthy theatrical family in Uppsala in the early twentieth century, it follows their lives after their widowed mother marries a stern bishop.",
  country=["se"])
F("casablanca_film", "Casablanca", 1942, "michael_curtiz", "romantic drama",
  "In wartime Morocco, a cynical American nightclub owner must choose between his love for a former flame and helping her and her husband, a Resistance leader, escape the Nazis.",
  studios=["warner_bros"], music=["max_steiner"],
  cast=["humphrey_bogart:Rick Blaine", "ingrid_bergman:Ilsa Lund", "claude_rains:Captain Louis Renault"],
  ptitle="Casablanca (film)")
F("pather_panchali", "Pather Panchali", 1955, "satyajit_ray", "Indian Bengali-language drama",
  "It portrays the childhood of Apu and his older sister Durga in a poor family in rural Bengal. | It was the first part of Ray's Apu Trilogy.",
  music=["ravi_shankar"], country=["in"])
F("the_400_blows", "The 400 Blows", 1959, "francois_truffaut", "French coming-of-age drama",
  "A misunderstood Parisian boy drifts into petty crime and is sent to a reform school. | It helped launch the French New Wave.",
  cast=["jean_pierre_leaud:Antoine Doinel"], country=["fr"], aliases=["Les Quatre Cents Coups"])
F("breathless_1960", "Breathless", 1960, "jean_luc_godard", "French crime drama",
  "A small-time car thief on the run in Paris hides out with his American girlfriend, in a film famous for its jump cuts. | It was developed from a story outline by François Truffaut.",
  cast=["jean_paul_belmondo:Michel Poiccard", "jean_seberg:Patricia Franchini"], country=["fr"],
  ptitle="Breathless (1960 film)", aliases=["À bout de souffle"])
F("breathless_1983", "Breathless", 1983, "jim_mcbride", "American crime drama",
  "This American remake of Godard's film moves the story to Los Angeles.",
  studios=["orion_pictures"], cast=["richard_gere:Jesse Lujack"], ptitle="Breathless (1983 film)",
  remake_of="breathless_1960")
F("in_the_mood_for_love", "In the Mood for Love", 2000, "wong_kar_wai", "Hong Kong romantic drama",
  "In Hong Kong in 1962, a man and a woman who rent neighbouring rooms discover that their spouses are having an affair with each other.",
  cast=["tony_leung:Chow Mo-wan", "maggie_cheung:Su Li-zhen"], country=[])
F("chungking_express", "Chungking Express", 1994, "wong_kar_wai", "Hong Kong romantic comedy-drama",
  "Two loosely linked stories follow lovesick Hong Kong policemen, one of whom is watched over by a snack-bar worker who secretly redecorates his flat.",
  cast=["tony_leung:Cop 663", "faye_wong:Faye"], country=[])

# --- Animation studios -------------------------------------------------------
F("toy_story", "Toy Story", 1995, "john_lasseter", "computer-animated comedy",
  "A cowboy doll fears being replaced as his owner's favourite toy by a new space-ranger action figure. | It was the first feature film made entirely with computer animation.",
  studios=["pixar", "walt_disney_pictures"], music=["randy_newman"],
  cast=["tom_hanks:Woody", "tim_allen:Buzz Lightyear"])
F("the_incredibles", "The Incredibles", 2004, "brad_bird", "computer-animated superhero film",
  "A family of superheroes forced to live ordinary suburban lives is pulled back into action when the father takes on a secret assignment.",
  studios=["pixar", "walt_disney_pictures"], music=["michael_giacchino"],
  cast=["craig_t_nelson:Bob Parr", "holly_hunter:Helen Parr", "samuel_l_jackson:Frozone"])
F("ratatouille", "Ratatouille", 2007, "brad_bird", "computer-animated comedy",
  "A rat with a gift for cooking teams up with a clumsy kitchen worker at a famous Paris restaurant.",
  studios=["pixar", "walt_disney_pictures"], music=["michael_giacchino"], cast=["patton_oswalt:Remy"],
  ptitle="Ratatouille (film)")
F("up", "Up", 2009, "pete_docter", "computer-animated adventure film",
  "A grieving widower ties thousands of balloons to his house and floats toward South America, not realising that a young Wilderness Explorer is stuck on his porch.",
  studios=["pixar", "walt_disney_pictures"], music=["michael_giacchino"], cast=["ed_asner:Carl Fredricksen"],
  ptitle="Up (2009 film)")
F("inside_out", "Inside Out", 2015, "pete_docter", "computer-animated comedy-drama",
  "Five personified emotions, Joy, Sadness, Anger, Fear and Disgust, guide an eleven-year-old girl named Riley through her family's move to San Francisco.",
  studios=["pixar", "walt_disney_pictures"], music=["michael_giacchino"],
  cast=["amy_poehler:Joy", "phyllis_smith:Sadness"], ptitle="Inside Out (2015 film)")
F("coco", "Coco", 2017, "lee_unkrich", "computer-animated fantasy film",
  "A Mexican boy who dreams of becoming a musician is transported to the Land of the Dead on the Day of the Dead and searches for his great-great-grandfather.",
  studios=["pixar", "walt_disney_pictures"], music=["michael_giacchino"],
  cast=["anthony_gonzalez:Miguel", "gael_garcia_bernal:Héctor"], ptitle="Coco (2017 film)")
F("shrek", "Shrek", 2001, ["andrew_adamson", "vicky_jenson"], "computer-animated comedy",
  "A grumpy ogre sets out with a talkative donkey to rescue Princess Fiona so that a scheming lord will give him back his swamp.",
  studios=["dreamworks_animation"], music=["harry_gregson_williams", "john_powell"],
  cast=["mike_myers:Shrek", "eddie_murphy:Donkey", "cameron_diaz:Princess Fiona"], ptitle="Shrek (film)")
F("lion_king_1994", "The Lion King", 1994, ["roger_allers", "rob_minkoff"], "animated musical drama",
  "A young lion prince flees his kingdom after his uncle Scar murders his father, Mufasa, and must later return to claim his place.",
  studios=["walt_disney_pictures"], music=["hans_zimmer"],
  cast=["matthew_broderick:Simba", "james_earl_jones:Mufasa", "jeremy_irons:Scar"], ptitle="The Lion King (1994 film)")
F("lion_king_2019", "The Lion King", 2019, "jon_favreau", "computer-animated musical drama",
  "This photorealistic remake of the 1994 animated film retells the story of Simba, Mufasa and Scar.",
  studios=["walt_disney_pictures"], music=["hans_zimmer"],
  cast=["donald_glover:Simba", "beyonce:Nala", "james_earl_jones:Mufasa", "chiwetel_ejiofor:Scar"],
  ptitle="The Lion King (2019 film)", remake_of="lion_king_1994")
F("frozen", "Frozen", 2013, ["chris_buck", "jennifer_lee"], "computer-animated musical fantasy film",
  "Princess Anna sets off across a frozen kingdom to find her sister Elsa, whose icy powers have trapped their home in eternal winter. | Its song \"Let It Go\" became a worldwide hit.",
  studios=["walt_disney_pictures"], music=["christophe_beck"],
  cast=["kristen_bell:Anna", "idina_menzel:Elsa"], ptitle="Frozen (2013 film)")
F("wallace_gromit", "Wallace & Gromit: The Curse of the Were-Rabbit", 2005, ["nick_park", "steve_box"], "stop-motion animated comedy",
  "The inventor Wallace and his silent dog Gromit run a humane pest-control business and must catch a giant rabbit ravaging the town's vegetable gardens before a competition.",
  studios=["aardman", "dreamworks_animation"], music=["julian_nott"],
  cast=["peter_sallis:Wallace", "helena_bonham_carter:Lady Tottington", "ralph_fiennes:Victor Quartermaine"],
  country=["uk", "us"], aliases=["The Curse of the Were-Rabbit"])

# --- Other Best Picture winners and near misses ------------------------------
F("shakespeare_in_love", "Shakespeare in Love", 1998, "john_madden", "romantic period comedy-drama",
  "A young William Shakespeare, struggling with writer's block, falls in love with a noblewoman who disguises herself as a man to act in his new play.",
  studios=["miramax"], music=["stephen_warbeck"],
  cast=["gwyneth_paltrow:Viola de Lesseps", "joseph_fiennes:William Shakespeare"], country=["us", "uk"])
F("the_kings_speech", "The King's Speech", 2010, "tom_hooper", "historical drama",
  "The future King George VI works with an unconventional Australian speech therapist to overcome his stammer.",
  studios=["weinstein_company"], music=["alexandre_desplat"],
  cast=["colin_firth:King George VI", "geoffrey_rush:Lionel Logue", "helena_bonham_carter:Queen Elizabeth"], country=["uk"])
F("twelve_years_a_slave", "12 Years a Slave", 2013, "steve_mcqueen_director", "historical drama",
  "Based on an 1853 memoir, it tells the story of Solomon Northup, a free Black man from New York who was kidnapped and sold into slavery in Louisiana.",
  studios=["fox_searchlight"], music=["hans_zimmer"],
  cast=["chiwetel_ejiofor:Solomon Northup", "lupita_nyongo:Patsey", "michael_fassbender:Edwin Epps"], country=["us", "uk"],
  ptitle="12 Years a Slave (film)")
F("forrest_gump", "Forrest Gump", 1994, "robert_zemeckis", "comedy-drama",
  "A kind-hearted Alabama man with a low IQ finds himself present at many of the defining events of American history from the 1950s to the 1980s.",
  studios=["paramount_pictures"], music=["alan_silvestri"],
  cast=["tom_hanks:Forrest Gump", "robin_wright:Jenny Curran", "gary_sinise:Lieutenant Dan Taylor"])
F("annie_hall", "Annie Hall", 1977, "woody_allen", "romantic comedy",
  "A neurotic New York comedian looks back on his failed relationship with the free-spirited Annie Hall.",
  studios=["united_artists"], cast=["woody_allen:Alvy Singer", "diane_keaton:Annie Hall"])
F("green_book", "Green Book", 2018, "peter_farrelly", "biographical comedy-drama",
  "In 1962 a working-class Italian-American bouncer is hired to drive the African-American pianist Don Shirley on a concert tour of the segregated Deep South.",
  studios=["universal_pictures"], music=["kris_bowers"],
  cast=["viggo_mortensen:Tony Vallelonga", "mahershala_ali:Don Shirley"], ptitle="Green Book (film)")
F("everything_everywhere", "Everything Everywhere All at Once", 2022, ["daniel_kwan", "daniel_scheinert"], "absurdist science fiction comedy-drama",
  "A Chinese-American laundromat owner who is being audited by the tax office discovers that she can connect with versions of herself in parallel universes.",
  studios=["a24"], music=["son_lux"],
  cast=["michelle_yeoh:Evelyn Quan Wang", "ke_huy_quan:Waymond Wang", "jamie_lee_curtis:Deirdre Beaubeirdre"])
F("joker", "Joker", 2019, "todd_phillips", "psychological thriller",
  "A struggling party clown and aspiring stand-up comedian in Gotham City descends into madness and violence and becomes the Joker.",
  studios=["warner_bros"], music=["hildur_gudnadottir"],
  cast=["joaquin_phoenix:Arthur Fleck", "robert_de_niro:Murray Franklin"], ptitle="Joker (2019 film)")
F("nomadland", "Nomadland", 2020, "chloe_zhao", "drama film",
  "After losing her job and her husband, a woman in her sixties leaves her small Nevada town to live in a van and travel the American West as a modern-day nomad.",
  studios=["fox_searchlight"], music=["ludovico_einaudi"], cast=["frances_mcdormand:Fern"])
F("bloody_sunday", "Bloody Sunday", 2002, "paul_greengrass", "historical drama",
  "Shot in a documentary style, it recreates the 1972 shooting of civil rights marchers by British soldiers in Derry, Northern Ireland.",
  cast=["james_nesbitt:Ivan Cooper"], country=["uk", "ie"], ptitle="Bloody Sunday (2002 film)")

# ---------------------------------------------------------------------------
# family ties
# ---------------------------------------------------------------------------
SIBLINGS = [("christopher_nolan", "jonathan_nolan"), ("ridley_scott", "tony_scott"), ("joel_coen", "ethan_coen"),
            ("ralph_fiennes", "joseph_fiennes")]
SPOUSES = [("christopher_nolan", "emma_thomas", "is married to"), ("joel_coen", "frances_mcdormand", "is married to"),
           ("james_cameron", "kathryn_bigelow", "was once married to")]
CHILDREN = [("carmine_coppola", "francis_ford_coppola"), ("francis_ford_coppola", "sofia_coppola"),
            ("hayao_miyazaki", "goro_miyazaki"), ("janet_leigh", "jamie_lee_curtis")]

# ---------------------------------------------------------------------------
# award wins and nominations: (award, ceremony or festival year, film, [people])
# Academy Award years are the year the ceremony was held.
# ---------------------------------------------------------------------------
BP, BD, BA, BACT = ("academy_award_best_picture", "academy_award_best_director", "academy_award_best_actor",
                    "academy_award_best_actress")
BSA, BSACT, SCORE, ANIM = ("academy_award_best_supporting_actor", "academy_award_best_supporting_actress",
                           "academy_award_best_original_score", "academy_award_best_animated_feature")
INTL, VFX, CINE, SCREEN, EDIT = ("academy_award_best_international_feature", "academy_award_best_visual_effects",
                                 "academy_award_best_cinematography", "academy_award_best_original_screenplay",
                                 "academy_award_best_film_editing")
WINS = [
    # Best Picture
    (BP, 1941, "rebecca", []), (BP, 1944, "casablanca_film", []), (BP, 1973, "the_godfather", []),
    (BP, 1975, "the_godfather_part_ii", []), (BP, 1978, "annie_hall", []), (BP, 1994, "schindlers_list", []),
    (BP, 1995, "forrest_gump", []), (BP, 1998, "titanic_1997", []), (BP, 1999, "shakespeare_in_love", []),
    (BP, 2001, "gladiator", []), (BP, 2004, "lotr_return_of_the_king", []), (BP, 2007, "the_departed", []),
    (BP, 2008, "no_country_for_old_men", []), (BP, 2010, "the_hurt_locker", []), (BP, 2011, "the_kings_speech", []),
    (BP, 2014, "twelve_years_a_slave", []), (BP, 2015, "birdman", []), (BP, 2017, "moonlight", []),
    (BP, 2018, "the_shape_of_water", []), (BP, 2019, "green_book", []), (BP, 2020, "parasite_2019", []),
    (BP, 2021, "nomadland", []), (BP, 2023, "everything_everywhere", []),
    (BP, 2024, "oppenheimer", ["emma_thomas", "christopher_nolan"]),
    # Best Director
    (BD, 1944, "casablanca_film", ["michael_curtiz"]), (BD, 1975, "the_godfather_part_ii", ["francis_ford_coppola"]),
    (BD, 1978, "annie_hall", ["woody_allen"]), (BD, 1994, "schindlers_list", ["steven_spielberg"]),
    (BD, 1995, "forrest_gump", ["robert_zemeckis"]), (BD, 1998, "titanic_1997", ["james_cameron"]),
    (BD, 1999, "saving_private_ryan", ["steven_spielberg"]), (BD, 2004, "lotr_return_of_the_king", ["peter_jackson"]),
    (BD, 2006, "brokeback_mountain", ["ang_lee"]), (BD, 2007, "the_departed", ["martin_scorsese"]),
    (BD, 2008, "no_country_for_old_men", ["joel_coen", "ethan_coen"]), (BD, 2010, "the_hurt_locker", ["kathryn_bigelow"]),
    (BD, 2011, "the_kings_speech", ["tom_hooper"]), (BD, 2013, "life_of_pi", ["ang_lee"]),
    (BD, 2014, "gravity", ["alfonso_cuaron"]), (BD, 2015, "birdman", ["alejandro_gonzalez_inarritu"]),
    (BD, 2016, "the_revenant", ["alejandro_gonzalez_inarritu"]), (BD, 2017, "la_la_land", ["damien_chazelle"]),
    (BD, 2018, "the_shape_of_water", ["guillermo_del_toro"]), (BD, 2019, "roma_2018", ["alfonso_cuaron"]),
    (BD, 2020, "parasite_2019", ["bong_joon_ho"]), (BD, 2021, "nomadland", ["chloe_zhao"]),
    (BD, 2023, "everything_everywhere", ["daniel_kwan", "daniel_scheinert"]), (BD, 2024, "oppenheimer", ["christopher_nolan"]),
    # acting
    (BA, 1973, "the_godfather", ["marlon_brando"]), (BA, 1995, "forrest_gump", ["tom_hanks"]),
    (BA, 2001, "gladiator", ["russell_crowe"]), (BA, 2011, "the_kings_speech", ["colin_firth"]),
    (BA, 2016, "the_revenant", ["leonardo_dicaprio"]), (BA, 2020, "joker", ["joaquin_phoenix"]),
    (BA, 2024, "oppenheimer", ["cillian_murphy"]),
    (BACT, 1978, "annie_hall", ["diane_keaton"]), (BACT, 1997, "fargo", ["frances_mcdormand"]),
    (BACT, 1999, "shakespeare_in_love", ["gwyneth_paltrow"]), (BACT, 2017, "la_la_land", ["emma_stone"]),
    (BACT, 2021, "nomadland", ["frances_mcdormand"]), (BACT, 2023, "everything_everywhere", ["michelle_yeoh"]),
    (BSA, 1975, "the_godfather_part_ii", ["robert_de_niro"]), (BSA, 1991, "goodfellas", ["joe_pesci"]),
    (BSA, 2008, "no_country_for_old_men", ["javier_bardem"]), (BSA, 2009, "the_dark_knight", ["heath_ledger"]),
    (BSA, 2010, "inglourious_basterds", ["christoph_waltz"]), (BSA, 2013, "django_unchained", ["christoph_waltz"]),
    (BSA, 2015, "whiplash", ["jk_simmons"]), (BSA, 2017, "moonlight", ["mahershala_ali"]),
    (BSA, 2019, "green_book", ["mahershala_ali"]), (BSA, 2020, "once_upon_a_time_in_hollywood", ["brad_pitt"]),
    (BSA, 2023, "everything_everywhere", ["ke_huy_quan"]), (BSA, 2024, "oppenheimer", ["robert_downey_jr"]),
    (BSACT, 2014, "twelve_years_a_slave", ["lupita_nyongo"]),
    (BSACT, 2023, "everything_everywhere", ["jamie_lee_curtis"]),
    # music
    (SCORE, 1941, "pinocchio_1940", ["leigh_harline"]), (SCORE, 1975, "the_godfather_part_ii", ["nino_rota", "carmine_coppola"]),
    (SCORE, 1976, "jaws", ["john_williams"]), (SCORE, 1978, "star_wars", ["john_williams"]),
    (SCORE, 1983, "et", ["john_williams"]), (SCORE, 1994, "schindlers_list", ["john_williams"]),
    (SCORE, 1995, "lion_king_1994", ["hans_zimmer"]), (SCORE, 1998, "titanic_1997", ["james_horner"]),
    (SCORE, 2001, "crouching_tiger", ["tan_dun"]), (SCORE, 2002, "lotr_fellowship", ["howard_shore"]),
    (SCORE, 2004, "lotr_return_of_the_king", ["howard_shore"]), (SCORE, 2006, "brokeback_mountain", ["gustavo_santaolalla"]),
    (SCORE, 2010, "up", ["michael_giacchino"]), (SCORE, 2013, "life_of_pi", ["mychael_danna"]),
    (SCORE, 2014, "gravity", ["steven_price"]), (SCORE, 2015, "the_grand_budapest_hotel", ["alexandre_desplat"]),
    (SCORE, 2016, "the_hateful_eight", ["ennio_morricone"]), (SCORE, 2017, "la_la_land", ["justin_hurwitz"]),
    (SCORE, 2018, "the_shape_of_water", ["alexandre_desplat"]), (SCORE, 2020, "joker", ["hildur_gudnadottir"]),
    (SCORE, 2022, "dune_2021", ["hans_zimmer"]), (SCORE, 2024, "oppenheimer", ["ludwig_goransson"]),
    # animated feature
    (ANIM, 2002, "shrek", []), (ANIM, 2003, "spirited_away", ["hayao_miyazaki"]), (ANIM, 2005, "the_incredibles", []),
    (ANIM, 2006, "wallace_gromit", []), (ANIM, 2008, "ratatouille", []), (ANIM, 2010, "up", []),
    (ANIM, 2014, "frozen", []), (ANIM, 2016, "inside_out", []), (ANIM, 2018, "coco", []),
    (ANIM, 2023, "gdt_pinocchio", ["guillermo_del_toro", "mark_gustafson"]),
    (ANIM, 2024, "the_boy_and_the_heron", ["hayao_miyazaki", "toshio_suzuki"]),
    # international feature
    (INTL, 1964, "eight_and_a_half", []), (INTL, 1984, "fanny_and_alexander", []), (INTL, 2001, "crouching_tiger", []),
    (INTL, 2019, "roma_2018", []), (INTL, 2020, "parasite_2019", []),
    # visual effects
    (VFX, 1969, "two_thousand_one", ["stanley_kubrick"]), (VFX, 1978, "star_wars", []), (VFX, 1980, "alien", []),
    (VFX, 1983, "et", []), (VFX, 1994, "jurassic_park", []), (VFX, 1998, "titanic_1997", []), (VFX, 2010, "avatar", []),
    (VFX, 2011, "inception", []), (VFX, 2013, "life_of_pi", []), (VFX, 2014, "gravity", []), (VFX, 2015, "interstellar", []),
    (VFX, 2018, "blade_runner_2049", []), (VFX, 2021, "tenet", []), (VFX, 2022, "dune_2021", []),
    # cinematography
    (CINE, 1998, "titanic_1997", ["russell_carpenter"]), (CINE, 2007, "pans_labyrinth", ["guillermo_navarro"]),
    (CINE, 2011, "inception", ["wally_pfister"]), (CINE, 2014, "gravity", ["emmanuel_lubezki"]),
    (CINE, 2015, "birdman", ["emmanuel_lubezki"]), (CINE, 2016, "the_revenant", ["emmanuel_lubezki"]),
    (CINE, 2018, "blade_runner_2049", ["roger_deakins"]), (CINE, 2019, "roma_2018", ["alfonso_cuaron"]),
    (CINE, 2022, "dune_2021", ["greig_fraser"]), (CINE, 2024, "oppenheimer", ["hoyte_van_hoytema"]),
    # screenplay and editing
    (SCREEN, 1978, "annie_hall", ["woody_allen"]), (SCREEN, 1995, "pulp_fiction", ["quentin_tarantino"]),
    (SCREEN, 1997, "fargo", ["joel_coen", "ethan_coen"]), (SCREEN, 2004, "lost_in_translation", ["sofia_coppola"]),
    (SCREEN, 2013, "django_unchained", ["quentin_tarantino"]), (SCREEN, 2015, "birdman", ["alejandro_gonzalez_inarritu"]),
    (SCREEN, 2020, "parasite_2019", ["bong_joon_ho"]), (SCREEN, 2023, "everything_everywhere", ["daniel_kwan", "daniel_scheinert"]),
    (EDIT, 2018, "dunkirk", []), (EDIT, 2024, "oppenheimer", []),
    # festivals
    ("palme_dor", 1960, "la_dolce_vita", ["federico_fellini"]), ("palme_dor", 1976, "taxi_driver", ["martin_scorsese"]),
    ("palme_dor", 1979, "apocalypse_now", ["francis_ford_coppola"]), ("palme_dor", 1984, "paris_texas_film", ["wim_wenders"]),
    ("palme_dor", 1994, "pulp_fiction", ["quentin_tarantino"]), ("palme_dor", 2019, "parasite_2019", ["bong_joon_ho"]),
    ("cannes_grand_prix", 2004, "oldboy_2003", ["park_chan_wook"]),
    ("golden_lion", 1951, "rashomon", ["akira_kurosawa"]), ("golden_lion", 2005, "brokeback_mountain", ["ang_lee"]),
    ("golden_lion", 2017, "the_shape_of_water", ["guillermo_del_toro"]), ("golden_lion", 2018, "roma_2018", ["alfonso_cuaron"]),
    ("golden_lion", 2019, "joker", ["todd_phillips"]), ("golden_lion", 2020, "nomadland", ["chloe_zhao"]),
    ("golden_bear", 1958, "wild_strawberries", ["ingmar_bergman"]), ("golden_bear", 2002, "spirited_away", ["hayao_miyazaki"]),
    ("golden_bear", 2002, "bloody_sunday", ["paul_greengrass"]),
]

NOMS = [
    (BP, 1976, "jaws", []), (BP, 1977, "taxi_driver", []), (BP, 1978, "star_wars", []), (BD, 1978, "star_wars", ["george_lucas"]),
    (BP, 1980, "apocalypse_now", []), (BP, 1983, "et", []), (BP, 1995, "pulp_fiction", []),
    (BD, 1995, "pulp_fiction", ["quentin_tarantino"]), (BP, 1999, "saving_private_ryan", []),
    (BP, 2002, "lotr_fellowship", []), (SCREEN, 2002, "memento", ["christopher_nolan", "jonathan_nolan"]),
    (BP, 2004, "lost_in_translation", []), (BD, 2004, "lost_in_translation", ["sofia_coppola"]),
    (ANIM, 2006, "howls_moving_castle", ["hayao_miyazaki"]), (BP, 2010, "avatar", []), (BD, 2010, "avatar", ["james_cameron"]),
    (BP, 2010, "up", []), (BP, 2011, "inception", []), (BP, 2014, "gravity", []),
    (ANIM, 2014, "the_wind_rises", ["hayao_miyazaki"]), (BP, 2015, "the_grand_budapest_hotel", []),
    (BP, 2015, "whiplash", []), (SCORE, 2015, "interstellar", ["hans_zimmer"]), (BP, 2016, "the_revenant", []),
    (BP, 2017, "la_la_land", []), (BP, 2017, "arrival", []), (BD, 2017, "arrival", ["denis_villeneuve"]),
    (BP, 2018, "dunkirk", []), (BD, 2018, "dunkirk", ["christopher_nolan"]), (BP, 2018, "lady_bird", []),
    (BD, 2018, "lady_bird", ["greta_gerwig"]), (BP, 2019, "roma_2018", []), (BP, 2020, "once_upon_a_time_in_hollywood", []),
    (BD, 2020, "once_upon_a_time_in_hollywood", ["quentin_tarantino"]), (BP, 2020, "little_women_2019", []),
    (BP, 2020, "joker", []), (BD, 2020, "joker", ["todd_phillips"]), (BP, 2022, "dune_2021", []), (BP, 2024, "barbie", []),
]

# ---------------------------------------------------------------------------
# relation names
# ---------------------------------------------------------------------------
DIRECTED_BY, FILMS_DIRECTED = "film.film.directed_by", "film.director.films_directed"
PRODUCED_BY, FILMS_PRODUCED = "film.film.produced_by_studio", "organization.studio.films_produced"
RELEASE_YEAR = "film.film.release_year"
MUSIC_BY, FILMS_SCORED = "film.film.music_by", "film.composer.films_scored"
STARRING, STARRED_IN = "film.film.starring", "film.actor.starred_in"
PERFORMANCES, PERF_FILM = "film.film.performances", "film.performance.film"
ACTOR_PERFS, PERF_ACTOR = "film.actor.performances", "film.performance.actor"
PERF_CHARACTER = "film.performance.character"
FILM_COUNTRY = "film.film.country"
REMAKE_OF, REMADE_AS = "film.film.remake_of", "film.film.remade_as"
PREQUEL, SEQUEL = "film.film.prequel", "film.film.sequel"
BIRTHPLACE, BORN_HERE = "people.person.place_of_birth", "location.location.people_born_here"
NATIONALITY = "people.person.nationality"
BIRTH_YEAR = "people.person.birth_year"
PROFESSION = "people.person.profession"
SIBLING = "people.person.sibling_s"
SPOUSE = "people.person.spouse_s"
CHILDREN_R, PARENTS_R = "people.person.children", "people.person.parents"
HQ_CITY, HQ_HERE = "organization.headquarters_city", "location.city.organizations_headquartered"
FOUNDED_YEAR = "organization.organization.founded_year"
FOUNDERS, FOUNDED_ORGS = "organization.organization.founders", "organization.organization_founder.organizations_founded"
PARENT_ORG, SUBSIDIARIES = "organization.organization.parent", "organization.organization.subsidiaries"
ORG_COUNTRY = "organization.organization.country"
CITY_COUNTRY, COUNTRY_CITIES = "location.city.country", "location.country.cities"
CONTAINED_BY, CONTAINS = "location.location.containedby", "location.location.contains"
CAPITAL = "location.country.capital"
FESTIVAL_LOCATION = "film.film_festival.location"
HONOR_AWARD, CATEGORY_WINNERS = "award.award_honor.award", "award.award_category.winners"
HONOR_YEAR = "award.award_honor.year"
HONOR_FOR, WORK_AWARDS = "award.award_honor.honored_for", "award.award_winning_work.awards_won"
HONOR_WINNER, WINNER_AWARDS = "award.award_honor.winner", "award.award_winner.awards_won"
NOM_AWARD, CATEGORY_NOMINEES = "award.award_nomination.award", "award.award_category.nominees"
NOM_YEAR = "award.award_nomination.year"
NOM_FOR, WORK_NOMS = "award.award_nomination.nominated_for", "award.award_nominated_work.nominations"
NOM_NOMINEE, NOMINEE_NOMS = "award.award_nomination.nominee", "award.award_nominee.nominations"
PRESENTED_BY, AWARDS_PRESENTED = "award.award_category.presented_by", "award.award_presenting_organization.awards_presented"

INVERSE_PAIRS = [
    (DIRECTED_BY, FILMS_DIRECTED), (PRODUCED_BY, FILMS_PRODUCED), (MUSIC_BY, FILMS_SCORED), (STARRING, STARRED_IN),
    (PERFORMANCES, PERF_FILM), (ACTOR_PERFS, PERF_ACTOR), (REMAKE_OF, REMADE_AS), (PREQUEL, SEQUEL),
    (BIRTHPLACE, BORN_HERE), (HQ_CITY, HQ_HERE), (FOUNDERS, FOUNDED_ORGS), (PARENT_ORG, SUBSIDIARIES),
    (CITY_COUNTRY, COUNTRY_CITIES), (CONTAINED_BY, CONTAINS), (HONOR_AWARD, CATEGORY_WINNERS),
    (HONOR_FOR, WORK_AWARDS), (HONOR_WINNER, WINNER_AWARDS), (NOM_AWARD, CATEGORY_NOMINEES), (NOM_FOR, WORK_NOMS),
    (NOM_NOMINEE, NOMINEE_NOMS), (PRESENTED_BY, AWARDS_PRESENTED), (CHILDREN_R, PARENTS_R),
]
SYMMETRIC = [SIBLING, SPOUSE]


# ---------------------------------------------------------------------------
# knowledge graph assembly
# ---------------------------------------------------------------------------
ENT = {}          # full id -> entity dict
TRIPLES = []
TRIPLE_SET = set()
TITLE = {}        # full id -> passage title
MEDIATOR_TYPES = {"award_honor", "award_nomination", "film_performance"}


def slug(s: str) -> str:
    s = s.lower().replace("&", "and")
    s = re.sub(r"[^a-z0-9]+", "_", s)
    return s.strip("_")


def eid(short: str) -> str:
    return short if short.startswith("m.") else "m." + short


COUNTRY_EID = {c: "m." + slug(v[0]) for c, v in COUNTRIES.items()}


def add_entity(full_id, name, etype, aliases=(), title=None):
    if full_id in ENT:
        raise ValueError(f"duplicate entity id {full_id}")
    ENT[full_id] = {"id": full_id, "name": name, "aliases": [a for a in dict.fromkeys(aliases) if a != name], "type": etype}
    if title:
        TITLE[full_id] = title


def add(h, r, t, inverse=True):
    h, t = eid(h), eid(t)
    key = (h, r, t)
    if key not in TRIPLE_SET:
        TRIPLE_SET.add(key)
        TRIPLES.append(key)
    if inverse:
        for a, b in INVERSE_PAIRS:
            if r == a:
                add(t, b, h, inverse=False)
        if r in SYMMETRIC:
            add(t, r, h, inverse=False)


def year_entity(y: int) -> str:
    full = f"m.year_{y}"
    if full not in ENT:
        add_entity(full, str(y), "year")
    return full


def build_graph():
    for c, (name, adj, the, aliases, capital, blurb) in COUNTRIES.items():
        add_entity(COUNTRY_EID[c], name, "country", aliases + [adj], title=name)
    for cid, c in CITIES.items():
        add_entity(eid(cid), c["name"], "city", c["aliases"] + ([c["ptitle"]] if c["ptitle"] != c["name"] else []),
                   title=c["ptitle"])
    for prof, noun in PROFESSIONS.items():
        add_entity(f"m.profession_{prof}", cap(noun), "profession")
    for sid, s in STUDIOS.items():
        add_entity(eid(sid), s["name"], "studio", s["aliases"], title=s["ptitle"])
    for oid, o in ORGS.items():
        add_entity(eid(oid), o["name"], o["kind"], o["aliases"], title=o["name"])
    for aid, a in AWARDS.items():
        add_entity(eid(aid), a[0], "award", a[4], title=a[0])
    for pid, p in PEOPLE.items():
        add_entity(eid(pid), p["name"], p["etype"], p["aliases"], title=p["ptitle"])
    for fid, f in FILMS.items():
        add_entity(eid(fid), f["name"], "film", f["aliases"], title=f["ptitle"])

    # geography
    for cid, c in CITIES.items():
        add(cid, CITY_COUNTRY, COUNTRY_EID[c["country"]])
        if c["within"]:
            add(cid, CONTAINED_BY, c["within"])
    for c, v in COUNTRIES.items():
        if v[4]:
            add(COUNTRY_EID[c], CAPITAL, v[4])
    # organisations
    for sid, s in STUDIOS.items():
        add(sid, ORG_COUNTRY, COUNTRY_EID[s["country"]])
        if s["founded"]:
            add(sid, FOUNDED_YEAR, year_entity(s["founded"]))
        if s["hq"]:
            add(sid, HQ_CITY, s["hq"])
        for fo in s["founders"]:
            add(sid, FOUNDERS, fo)
        if s["parent"]:
            add(sid, PARENT_ORG, s["parent"])
    for oid, o in ORGS.items():
        add(oid, ORG_COUNTRY, COUNTRY_EID[o["country"]])
        add(oid, FOUNDED_YEAR, year_entity(o["founded"]))
        if o.get("hq"):
            add(oid, HQ_CITY, o["hq"])
        if o.get("city"):
            add(oid, FESTIVAL_LOCATION, o["city"])
    for aid, a in AWARDS.items():
        add(aid, PRESENTED_BY, a[2])
    # people
    for pid, p in PEOPLE.items():
        if p["year"]:
            add(pid, BIRTH_YEAR, year_entity(p["year"]))
        if p["place"]:
            add(pid, BIRTHPLACE, p["place"])
        for n in p["nats"]:
            add(pid, NATIONALITY, COUNTRY_EID[n])
        for pr in p["profs"]:
            add(pid, PROFESSION, f"m.profession_{pr}")
    for a, b in SIBLINGS:
        add(a, SIBLING, b)
    for a, b, _ in SPOUSES:
        add(a, SPOUSE, b)
    for parent, child in CHILDREN:
        add(parent, CHILDREN_R, child)
    # films
    perf_n = 0
    for fid, f in FILMS.items():
        add(fid, RELEASE_YEAR, year_entity(f["year"]))
        for d in f["dirs"]:
            add(fid, DIRECTED_BY, d)
        for s in f["studios"]:
            add(fid, PRODUCED_BY, s)
        for m in f["music"]:
            add(fid, MUSIC_BY, m)
        for c in f["country"]:
            add(fid, FILM_COUNTRY, COUNTRY_EID[c])
        if f["remake_of"]:
            add(fid, REMAKE_OF, f["remake_of"])
        if f["prequel"]:
            add(fid, PREQUEL, f["prequel"])
        for actor, ch in f["cast"]:
            add(fid, STARRING, actor)
            perf_n += 1
            pid = f"m.perf_{perf_n:04d}"
            PERF_ID[(fid, actor)] = pid
            add_entity(pid, f"{PEOPLE[actor]['name']} in {f['name']} ({f['year']})", "film_performance")
            add(fid, PERFORMANCES, pid)
            add(actor, ACTOR_PERFS, pid)
            if ch:
                cid = "m.char_" + slug(ch)
                if cid not in ENT:
                    add_entity(cid, ch, "character")
                add(pid, PERF_CHARACTER, cid)
    # awards
    for i, (aw, y, film, people) in enumerate(WINS, 1):
        rid = f"m.award_win_{i:04d}"
        WIN_ID[(aw, y, film)] = rid
        add_entity(rid, f"{AWARDS[aw][0]} {y}: {FILMS[film]['name']}", "award_honor")
        add(rid, HONOR_AWARD, aw)
        add(rid, HONOR_YEAR, year_entity(y))
        add(rid, HONOR_FOR, film)
        for p in people:
            add(rid, HONOR_WINNER, p)
    for i, (aw, y, film, people) in enumerate(NOMS, 1):
        rid = f"m.award_nom_{i:04d}"
        NOM_ID[(aw, y, film)] = rid
        add_entity(rid, f"{AWARDS[aw][0]} {y} nomination: {FILMS[film]['name']}", "award_nomination")
        add(rid, NOM_AWARD, aw)
        add(rid, NOM_YEAR, year_entity(y))
        add(rid, NOM_FOR, film)
        for p in people:
            add(rid, NOM_NOMINEE, p)


PERF_ID, WIN_ID, NOM_ID = {}, {}, {}

# ---------------------------------------------------------------------------
# passage writing
# ---------------------------------------------------------------------------
PASSAGES = []     # dicts: id, title, text, entity
SENTENCE_COUNT = {}


def assemble(parts, key):
    """parts: list of (order, priority, sentence).  priority 0 = required.
    Keeps required sentences plus optional ones (lowest priority number first)
    up to six sentences, then restores reading order."""
    parts = [p for p in parts if p[2]]
    required = [p for p in parts if p[1] == 0]
    optional = sorted([p for p in parts if p[1] > 0], key=lambda p: (p[1], p[0]))
    chosen = list(required)
    for p in optional:
        if len(chosen) >= 6:
            break
        chosen.append(p)
    chosen.sort(key=lambda p: p[0])
    chosen = [(a, b, c[:-1] if c.endswith("..") and not c.endswith("...") else c) for a, b, c in chosen]
    if not 2 <= len(chosen) <= 6:
        raise ValueError(f"passage {key} has {len(chosen)} sentences")
    SENTENCE_COUNT[key] = len(chosen)
    return " ".join(p[2] for p in chosen)


def pname(pid):
    return PEOPLE[pid]["name"]


def fname(fid):
    return FILMS[fid]["name"]


def fyear(fid):
    return f"{FILMS[fid]['name']} ({FILMS[fid]['year']})"


def city_display(cid):
    c = CITIES[cid]
    if cid in ("new_york_city", "washington_dc", "mexico_city", "guatemala_city", "hong_kong"):
        return c["name"]
    if c["ptitle"] != c["name"]:
        return c["ptitle"]
    if c["region"]:
        return f"{c['name']}, {c['region'].split(', ')[-1]}"
    return f"{c['name']}, {cname(c['country'], the=False)}"


def pron(g):
    return {"m": ("he", "his", "him"), "f": ("she", "her", "her"), "n": ("they", "their", "them")}[g]


def award_phrase_for_film(wins):
    """wins: list of (award, year). Returns list of phrases."""
    groups = defaultdict(list)
    for aw, y in wins:
        kind = AWARDS[aw][3]
        groups[(y, kind)].append(aw)
    phrases = []
    for (y, kind), aws in sorted(groups.items()):
        if kind == "oscar":
            labels = [AWARDS[a][1] for a in aws]
            if len(labels) == 1:
                phrases.append(f"the Academy Award for {labels[0]} at the {y} ceremony")
            else:
                phrases.append(f"the Academy Awards for {join_and(labels)} at the {y} ceremony")
        else:
            for a in aws:
                phrases.append(f"the {AWARDS[a][1]} at the {y} {EVENT_NAME[kind]}")
    return phrases


WINS_BY_FILM = defaultdict(list)
WINS_BY_PERSON = defaultdict(list)
NOMS_BY_FILM = defaultdict(list)
NOMS_BY_PERSON = defaultdict(list)
WINNER_FILM = {}


def index_awards():
    for aw, y, film, people in WINS:
        WINS_BY_FILM[film].append((aw, y))
        WINNER_FILM.setdefault((aw, y), []).append(film)
        for p in people:
            WINS_BY_PERSON[p].append((aw, y, film))
    for aw, y, film, people in NOMS:
        NOMS_BY_FILM[film].append((aw, y))
        for p in people:
            NOMS_BY_PERSON[p].append((aw, y, film))


def film_text(f):
    fid, t, y = f["id"], f["name"], f["year"]
    dn = join_and([pname(d) for d in f["dirs"]])
    kind = f["kind"]
    dword = "directors" if len(f["dirs"]) > 1 else "director"
    v = pick(fid + "/intro", 4)
    if v == 0:
        s1 = f"{t} is {art(str(y))} {y} {kind} directed by {dn}."
    elif v == 1:
        s1 = f"Directed by {dn}, {t} is {art(kind)} {kind} released in {y}."
    elif v == 2:
        s1 = f"{dn} directed {t}, {art(kind)} {kind} released in {y}."
    else:
        s1 = f"Released in {y}, {t} is {art(kind)} {kind} by {dword} {dn}."
    parts = [(0, 0, s1)]
    bl = split_blurb(f["blurb"])
    for i, b in enumerate(bl):
        parts.append((1 + i, 0 if i == 0 else 2, b))
    studios = [STUDIOS[s]["name"] for s in f["studios"]]
    music = [pname(m) for m in f["music"]]
    sn, mn = join_and(studios), join_and(music)
    v = pick(fid + "/prod", 3)
    if studios and music:
        s = [f"{sn} released the film, and {mn} composed the score.",
             f"It was {art(sn)} {sn} release with music by {mn}.",
             f"{mn} wrote the music, and {sn} handled the release."][v]
        if v == 1 and len(studios) > 1:
            s = f"It was released by {sn}, with music by {mn}."
    elif studios:
        s = [f"It was released by {sn}.", f"{sn} produced and released it.",
             f"The {'studios' if len(studios) > 1 else 'studio'} behind it {'were' if len(studios) > 1 else 'was'} {sn}."][v]
    elif music:
        s = [f"{mn} composed its score.", f"The music is by {mn}.", f"Its score was written by {mn}."][v]
    else:
        s = ""
    parts.append((5, 0, s))
    if f["cast"]:
        animated = "animated" in kind and "live-action" not in kind
        items = [f"{pname(a)} as {ch}" if ch else pname(a) for a, ch in f["cast"]]
        lst = join_and(items)
        v = pick(fid + "/cast", 3)
        if animated:
            s = [f"The voice cast includes {lst}.", f"Its voice cast features {lst}.", f"The characters are voiced by a cast that includes {lst}."][v]
        else:
            s = [f"It stars {lst}.", f"The cast includes {lst}.", f"Its cast is led by {lst}."][v]
        parts.append((6, 0, s))
    remakes = [g for g in FILMS.values() if g["remake_of"] == fid]
    if remakes:
        parts.append((7, 3, f"It was later remade as {join_and(fyear(g['id']) for g in remakes)}."))
    sequels = [g for g in FILMS.values() if g["prequel"] == fid]
    if sequels:
        parts.append((7.5, 4, f"It was followed by the sequel {join_and(fyear(g['id']) for g in sequels)}."))
    wins = WINS_BY_FILM.get(fid, [])
    if wins:
        phr = award_phrase_for_film(wins)
        shared = []
        for aw, yy in wins:
            others = [o for o in WINNER_FILM[(aw, yy)] if o != fid]
            if others:
                shared.append(f"The {AWARDS[aw][1]} that year was shared with {join_and(fname(o) for o in others)}.")
        lead = ["It won", "It received", "Its honours include"][pick(fid + "/aw", 3)]
        parts.append((8, 0, f"{lead} {join_and(phr)}."))
        for i, sh in enumerate(shared):
            parts.append((8.5 + i / 10, 1, sh))
    noms = NOMS_BY_FILM.get(fid, [])
    if noms:
        by_year = defaultdict(list)
        for aw, yy in noms:
            by_year[yy].append(aw)
        phr = []
        for yy, aws in sorted(by_year.items()):
            labels = [AWARDS[a][1] for a in aws]
            if len(labels) == 1:
                p = f"the Academy Award for {labels[0]} at the {yy} ceremony"
                won = WINNER_FILM.get((aws[0], yy))
                if won:
                    p += f", which went to {join_and(fname(w) for w in won)}"
            else:
                p = f"the Academy Awards for {join_and(labels)} at the {yy} ceremony"
            phr.append(p)
        lead = "It was also nominated for" if wins else "It was nominated for"
        parts.append((9, 2, f"{lead} {join_and(phr)}."))
    return assemble(parts, fid)


def nat_string(p):
    if not p["nats"]:
        return "Hong Kong"
    return "-".join(cadj(n) for n in p["nats"])


def prof_string(p):
    nouns = [PROFESSIONS[x] for x in p["profs"][:2]]
    if len(nouns) == 2 and nouns[0] == "film director":
        nouns[1] = nouns[1].replace("film ", "")
    return " and ".join(nouns)


def person_text(p):
    pid, name = p["id"], p["name"]
    he, his, him = pron(p["g"])
    He, His = cap(he), cap(his)
    dead = p["dead"]
    nat, prof = nat_string(p), prof_string(p)
    natprof = f"{nat} {prof}"
    v = pick(pid + "/s1", 3)
    if p["etype"] == "musical_group":
        s1 = f"{name} is {art(nat)} {nat} {prof}."
    elif p["year"] and p["place"]:
        disp = city_display(p["place"])
        s1 = [f"{cap(natprof)} {name} was born in {disp} in {p['year']}.",
              f"{name}, {art(nat)} {natprof}, was born in {p['year']} in {disp}.",
              f"Born in {disp} in {p['year']}, {name} went on to become {art(nat)} {natprof}."][v]
    elif p["year"]:
        s1 = [f"{cap(natprof)} {name} was born in {p['year']}.",
              f"{name}, {art(nat)} {natprof}, was born in {p['year']}.",
              f"{name} is {art(nat)} {natprof} who was born in {p['year']}."][v]
        if v == 2 and dead:
            s1 = f"{name} was {art(nat)} {natprof} who was born in {p['year']}."
    elif p["place"]:
        s1 = f"{name}, {art(nat)} {natprof}, was born in {city_display(p['place'])}."
    else:
        s1 = f"{name} {'was' if dead else 'is'} {art(nat)} {natprof}."
    parts = [(0, 0, s1)]
    bl = split_blurb(p["blurb"])
    for i, b in enumerate(bl):
        parts.append((6 + i, 1 if i == 0 else 3, b))
    directed = sorted([f for f in FILMS.values() if pid in f["dirs"]], key=lambda f: (f["year"], f["name"]))
    scored = sorted([f for f in FILMS.values() if pid in f["music"]], key=lambda f: (f["year"], f["name"]))
    roles = sorted([(f, ch) for f in FILMS.values() for a, ch in f["cast"] if a == pid], key=lambda x: (x[0]["year"], x[0]["name"]))
    if directed:
        lst = join_and(fyear(f["id"]) for f in directed)
        v = pick(pid + "/dir", 3)
        s = [f"{He} directed {lst}.", f"{His} films as director include {lst}.", f"As a director, {he} made {lst}."][v]
        if len(directed) == 1:
            s = [f"{He} directed {lst}.", f"{He} directed {lst}.", f"{His} work as a director includes {lst}."][v]
        parts.append((1, 0, s))
    if scored:
        lst = join_and(fyear(f["id"]) for f in scored)
        v = pick(pid + "/score", 3)
        if len(scored) == 1:
            parts.append((2, 0, [f"{He} composed the music for {lst}.", f"{He} wrote the score for {lst}.",
                                 f"{His} film work includes the score of {lst}."][v]))
        else:
            parts.append((2, 0, [f"{He} composed the music for {lst}.", f"{His} film scores include {lst}.",
                                 f"{He} wrote the scores of {lst}."][v]))
    if roles:
        groups, seen = [], {}
        for f, ch in roles:
            if ch and ch in seen:
                groups[seen[ch]][1].append(fyear(f["id"]))
                continue
            if ch:
                seen[ch] = len(groups)
            groups.append((ch, [fyear(f["id"])]))
        items = [f"{ch} in {join_and(fs)}" if ch else join_and(fs) for ch, fs in groups]
        if any(len(fs) > 1 for _, fs in groups) and len(items) > 1:
            lst = "; ".join(items[:-1]) + "; and " + items[-1]
        else:
            lst = join_and(items)
        v = pick(pid + "/roles", 3)
        parts.append((3, 0, [f"{His} roles include {lst}.", f"{He} played {lst}.", f"{His} film roles include {lst}."][v]))
    wins = WINS_BY_PERSON.get(pid, [])
    if wins:
        by_award = defaultdict(list)
        for aw, y, film in wins:
            by_award[aw].append((y, film))
        phr = []   # (sort year, phrase)
        singles = defaultdict(list)   # (year, film, kind) -> [award]
        for aw, lst in by_award.items():
            kind = AWARDS[aw][3]
            if len(lst) > 1:
                lst.sort()
                if kind == "oscar":
                    items = join_and(f"{fname(film)} ({y} ceremony)" for y, film in lst)
                else:
                    items = join_and(f"{fname(film)} ({y})" for y, film in lst)
                phr.append((lst[0][0], f"the {AWARDS[aw][0]} for {items}"))
            else:
                y, film = lst[0]
                singles[(y, film, kind)].append(aw)
        for (y, film, kind), aws in singles.items():
            if kind == "oscar":
                labels = [AWARDS[a][1] for a in aws]
                word = "Award" if len(labels) == 1 else "Awards"
                phr.append((y, f"the Academy {word} for {join_and(labels)} for {fname(film)} at the {y} ceremony"))
            else:
                for a in aws:
                    phr.append((y, f"the {AWARDS[a][0]} for {fname(film)} at the {y} {EVENT_NAME[kind]}"))
        phr.sort()
        parts.append((4, 0, f"{He} won {join_and(x for _, x in phr)}."))
    noms = NOMS_BY_PERSON.get(pid, [])
    if noms:
        phr = [f"the {AWARDS[aw][0]} for {fname(film)} at the {y} ceremony" for aw, y, film in sorted(noms, key=lambda x: x[1])]
        parts.append((4.5, 4, f"{He} was {'also ' if wins else ''}nominated for {join_and(phr)}."))
    fam = []
    be = "was" if dead else "is"
    for a, b in SIBLINGS:
        other = b if a == pid else a if b == pid else None
        if other:
            rel = {"m": "brother", "f": "sister"}[PEOPLE[pid]["g"]]
            fam.append(f"{be} the {rel} of {pname(other)}")
    for a, b, verb in SPOUSES:
        other = b if a == pid else a if b == pid else None
        if other:
            if dead and verb.startswith("is "):
                verb = "was " + verb[3:]
            fam.append(f"{verb} {pname(other)}")
    for parent, child in CHILDREN:
        if parent == pid:
            fam.append(f"{be} the {'father' if p['g'] == 'm' else 'mother'} of {pname(child)}")
        if child == pid:
            fam.append(f"{be} the {'son' if p['g'] == 'm' else 'daughter'} of {pname(parent)}")
    if fam:
        parts.append((5, 0, f"{He} {join_and(fam)}."))
    return assemble(parts, pid)


def studio_text(s):
    sid, name = s["id"], s["name"]
    adj = cadj(s["country"])
    kind = s["kind"]
    v = pick(sid + "/s1", 2)
    if s["founded"]:
        s1 = [f"{name} is {art(adj)} {adj} {kind} founded in {s['founded']}.",
              f"Founded in {s['founded']}, {name} is {art(adj)} {adj} {kind}."][v]
    else:
        s1 = f"{name} is {art(adj)} {adj} {kind}."
    parts = [(0, 0, s1)]
    if s["hq"]:
        disp = city_display(s["hq"])
        v = pick(sid + "/hq", 3)
        parts.append((1, 0, [f"Its headquarters are in {disp}.", f"The company is based in {disp}.",
                             f"It has its headquarters in {disp}."][v]))
    for i, b in enumerate(split_blurb(s["blurb"])):
        parts.append((2 + i, 1 if i == 0 else 3, b))
    founders = [pname(x) for x in s["founders"]]
    if founders and not all(f in s["blurb"] for f in founders):
        parts.append((4, 0, f"It was founded by {join_and(founders)}."))
    if s["parent"] and STUDIOS[s["parent"]]["name"] not in s["blurb"]:
        parts.append((4.5, 1, f"It is part of {STUDIOS[s['parent']]['name']}."))
    subs = [x["name"] for x in STUDIOS.values() if x["parent"] == sid]
    if subs:
        parts.append((4.6, 2, f"Its specialty labels and subsidiaries include {join_and(subs)}."))
    films = sorted([f for f in FILMS.values() if sid in f["studios"]], key=lambda f: (f["year"], f["name"]))
    if films:
        shown = films if len(films) <= 12 else films[:: max(1, len(films) // 12)][:12]
        lst = join_and(fyear(f["id"]) for f in shown)
        v = pick(sid + "/films", 3)
        if len(shown) == 1:
            v = v % 2
        parts.append((5, 0, [f"Films released under its banner include {lst}.", f"Its films include {lst}.",
                             f"Among the films it produced or released are {lst}."][v]))
    return assemble(parts, sid)


def city_text(c):
    cid, name = c["id"], c["name"]
    kind = c["kind"]
    cn = cname(c["country"])
    v = pick(cid + "/s1", 2)
    bl0 = split_blurb(c["blurb"])[:1]
    describes_itself = bool(bl0) and bl0[0].startswith(("It is", "This"))
    if describes_itself:
        where = f"{c['region']}, in {cn}" if c["region"] else cn
        s1 = f"{name} is located in {where}."
    elif c["region"]:
        s1 = [f"{name} is {art(kind)} {kind} in {c['region']}, in {cn}.",
              f"Located in {c['region']}, {name} is {art(kind)} {kind} in {cn}."][v]
    else:
        s1 = f"{name} is {art(kind)} {kind} in {cn}."
    parts = [(0, 0, s1)]
    for i, b in enumerate(split_blurb(c["blurb"])):
        parts.append((1 + i, 1, b))
    if c["within"] and CITIES[c["within"]]["name"] + " " not in (c["region"] or "") + " ":
        parts.append((3, 1, f"It lies within {CITIES[c['within']]['name']}."))
    born = sorted([p for p in PEOPLE.values() if p["place"] == cid], key=lambda p: (p["year"] or 0, p["name"]))
    if born:
        names = [p["name"] for p in born][:10]
        v = pick(cid + "/born", 3)
        s = [f"People born there include {join_and(names)}.", f"It is the birthplace of {join_and(names)}.",
             f"Notable people born in {name} include {join_and(names)}."][v]
        parts.append((4, 0, s))
    hq = [s["name"] for s in STUDIOS.values() if s["hq"] == cid] + [o["name"] for o in ORGS.values() if o.get("hq") == cid]
    if hq:
        if len(hq) == 1:
            s = [f"{hq[0]} has its headquarters there.", f"It is home to the headquarters of {hq[0]}."][pick(cid + "/hq", 2)]
        else:
            s = [f"{join_and(hq)} have their headquarters there.", f"It is home to the headquarters of {join_and(hq)}."][pick(cid + "/hq", 2)]
        parts.append((5, 0, s))
    return assemble(parts, cid)


def country_text(code):
    name, adj, the, aliases, capital, blurb = COUNTRIES[code]
    cn = cname(code)
    s1 = f"{cap(cn)} is a country" + (f" whose capital is {CITIES[capital]['name']}" if capital else "")
    s1 = s1 if s1.endswith(".") else s1 + "."
    parts = [(0, 0, s1)]
    for i, b in enumerate(split_blurb(blurb)):
        parts.append((1 + i, 1, b))
    cities = {cid for cid, c in CITIES.items() if c["country"] == code}
    born = sorted([p for p in PEOPLE.values() if p["place"] in cities], key=lambda p: (p["year"] or 0, p["name"]))
    if born:
        names = [p["name"] for p in born]
        if len(names) > 8:
            names = names[:: max(1, len(names) // 8)][:8]
        parts.append((4, 2, f"Film figures born in {cn} include {join_and(names)}."))
    films = sorted([f for f in FILMS.values() if code in f["country"]], key=lambda f: (f["year"], f["name"]))
    if films and len(films) <= 40:
        shown = films if len(films) <= 8 else films[:: max(1, len(films) // 8)][:8]
        parts.append((5, 3, f"Films produced there include {join_and(fyear(f['id']) for f in shown)}."))
    if len([p for p in parts if p[2]]) < 2:
        parts.append((6, 0, f"Its people are called {adj}."))
    return assemble(parts, COUNTRY_EID[code])


def award_text(aid):
    full, label, org, kind, aliases, blurb = AWARDS[aid]
    if kind == "oscar":
        s1 = f"The {full} is presented by the {ORGS[org]['name']} at the annual Academy Awards ceremony."
    else:
        s1 = f"The {full} is the top prize of the {ORGS[org]['name']}."
        if aid == "cannes_grand_prix":
            s1 = f"The Grand Prix is awarded at the {ORGS[org]['name']}."
    parts = [(0, 0, s1)]
    for i, b in enumerate(split_blurb(blurb)):
        parts.append((1 + i, 1, b))
    wins = sorted([(y, film, people) for aw, y, film, people in WINS if aw == aid], key=lambda x: (x[0], x[1]))

    def item(y, film, people):
        if people and aid not in ("academy_award_best_picture",):
            return f"{join_and(pname(p) for p in people)} for {fname(film)} ({y})"
        return f"{fname(film)} ({y})"
    if kind == "oscar":
        early = [w for w in wins if w[0] < 2000]
        late = [w for w in wins if w[0] >= 2000]
        if early:
            parts.append((3, 0, "Winners at ceremonies held before 2000 include " + join_and(item(*w) for w in early) + "."))
        if late:
            parts.append((4, 0, "Since 2000 it has gone to " + join_and(item(*w) for w in late) + "."))
        parts.append((5, 0, "The years given are the years in which the ceremonies took place."))
    else:
        parts.append((3, 0, "Winners include " + join_and(item(*w) for w in wins) + "."))
    return assemble(parts, aid)


def org_text(oid):
    o = ORGS[oid]
    parts = [(i, 0, s) for i, s in enumerate(split_blurb(o["text"]))]
    return assemble(parts, oid)


def build_passages():
    items = []
    for fid, f in FILMS.items():
        items.append((f["ptitle"], film_text(f), eid(fid)))
    for pid, p in PEOPLE.items():
        items.append((p["ptitle"], person_text(p), eid(pid)))
    for sid, s in STUDIOS.items():
        items.append((s["ptitle"], studio_text(s), eid(sid)))
    for oid, o in ORGS.items():
        items.append((o["name"], org_text(oid), eid(oid)))
    for aid in AWARDS:
        items.append((AWARDS[aid][0], award_text(aid), eid(aid)))
    for cid, c in CITIES.items():
        items.append((c["ptitle"], city_text(c), eid(cid)))
    for code in COUNTRIES:
        items.append((COUNTRIES[code][0], country_text(code), COUNTRY_EID[code]))
    titles = set()
    for i, (title, text, ent) in enumerate(items, 1):
        if title in titles:
            raise ValueError(f"duplicate passage title {title}")
        titles.add(title)
        PASSAGES.append({"id": f"p{i:04d}", "title": title, "text": text, "entity": ent})

# ---------------------------------------------------------------------------
# questions
# ---------------------------------------------------------------------------
QUESTIONS = []


def T(h, r, t):
    return [eid(h), r, eid(t)]


def Q(question, path, qtype, decomposition, extra_aliases=(), answer=None, hops=None):
    """Answerable single/bridge question whose gold path ends at the answer entity."""
    ans_ent = path[-1][2]
    e = ENT[ans_ent]
    QUESTIONS.append({
        "question": question, "answers": [answer or e["name"]],
        "aliases": list(dict.fromkeys(list(e["aliases"]) + list(extra_aliases))),
        "hops": hops or len(path), "type": qtype, "answerable": True, "topic_entities": [path[0][0]],
        "decomposition": [{"question": q, "answer": a} for q, a in decomposition],
        "gold_path": path, "answer_entities": [ans_ent]})


def QC(question, facts, answer_ent, decomposition):
    e = ENT[eid(answer_ent)]
    QUESTIONS.append({
        "question": question, "answers": [e["name"]], "aliases": list(e["aliases"]), "hops": 2,
        "type": "comparison", "answerable": True, "topic_entities": [f[0] for f in facts],
        "decomposition": [{"question": q, "answer": a} for q, a in decomposition],
        "gold_path": facts, "answer_entities": [eid(answer_ent)]})


def QU(question, topics, hops, note):
    QUESTIONS.append({
        "question": question, "answers": [], "aliases": [], "hops": hops, "type": "unanswerable", "answerable": False,
        "topic_entities": [eid(t) for t in topics], "decomposition": [], "gold_path": [], "answer_entities": [],
        "note": note})


def W(aw, y, film):
    return WIN_ID[(aw, y, film)]


def PF(film, actor):
    return PERF_ID[(film, actor)]


def build_questions():
    us_aliases = ["USA", "United States of America", "US", "U.S.", "America"]
    # ---- single hop -------------------------------------------------------
    Q("Who directed Inception?", [T("inception", DIRECTED_BY, "christopher_nolan")], "single",
      [("Who directed Inception?", "Christopher Nolan")])
    Q("In what year was Spirited Away released?", [T("spirited_away", RELEASE_YEAR, "year_2001")], "single",
      [("When was Spirited Away released?", "2001")])
    Q("Which studio produced My Neighbor Totoro?", [T("my_neighbor_totoro", PRODUCED_BY, "studio_ghibli")], "single",
      [("Which studio produced My Neighbor Totoro?", "Studio Ghibli")])
    Q("Who composed the music for Jaws?", [T("jaws", MUSIC_BY, "john_williams")], "single",
      [("Who composed the score of Jaws?", "John Williams")])
    Q("In which city was Hayao Miyazaki born?", [T("hayao_miyazaki", BIRTHPLACE, "tokyo")], "single",
      [("Where was Hayao Miyazaki born?", "Tokyo")])
    Q("In which city does Warner Bros. have its headquarters?", [T("warner_bros", HQ_CITY, "burbank")], "single",
      [("Where is Warner Bros. headquartered?", "Burbank")], extra_aliases=["Burbank, California"])
    Q("Who directed the 2019 film Parasite?", [T("parasite_2019", DIRECTED_BY, "bong_joon_ho")], "single",
      [("Who directed Parasite (2019)?", "Bong Joon-ho")])
    Q("Who directed the 1997 film Titanic?", [T("titanic_1997", DIRECTED_BY, "james_cameron")], "single",
      [("Who directed Titanic (1997)?", "James Cameron")])
    Q("Who composed the score for Oppenheimer?", [T("oppenheimer", MUSIC_BY, "ludwig_goransson")], "single",
      [("Who composed the music of Oppenheimer?", "Ludwig Göransson")])
    Q("In what year was The Godfather released?", [T("the_godfather", RELEASE_YEAR, "year_1972")], "single",
      [("When was The Godfather released?", "1972")])
    Q("Where was Heath Ledger born?", [T("heath_ledger", BIRTHPLACE, "perth_au")], "single",
      [("Where was Heath Ledger born?", "Perth")], extra_aliases=["Perth, Australia"])
    Q("In which country is the town of Kapuskasing?", [T("kapuskasing", CITY_COUNTRY, COUNTRY_EID["ca"])], "single",
      [("Which country is Kapuskasing in?", "Canada")])
    Q("What is the name of Christopher Nolan's brother?", [T("christopher_nolan", SIBLING, "jonathan_nolan")], "single",
      [("Who is Christopher Nolan's brother?", "Jonathan Nolan")])

    # ---- two hops ---------------------------------------------------------
    Q("Where was the director of Inception born?",
      [T("inception", DIRECTED_BY, "christopher_nolan"), T("christopher_nolan", BIRTHPLACE, "london")], "bridge",
      [("Who directed Inception?", "Christopher Nolan"), ("Where was Christopher Nolan born?", "London")])
    Q("In which city is the studio that released The Dark Knight headquartered?",
      [T("the_dark_knight", PRODUCED_BY, "warner_bros"), T("warner_bros", HQ_CITY, "burbank")], "bridge",
      [("Which studio released The Dark Knight?", "Warner Bros."), ("Where is Warner Bros. headquartered?", "Burbank")],
      extra_aliases=["Burbank, California"])
    Q("In which town was the composer of Spirited Away born?",
      [T("spirited_away", MUSIC_BY, "joe_hisaishi"), T("joe_hisaishi", BIRTHPLACE, "nakano_nagano")], "bridge",
      [("Who composed the music for Spirited Away?", "Joe Hisaishi"), ("Where was Joe Hisaishi born?", "Nakano, Nagano")])
    Q("What country is the composer of Inception from?",
      [T("inception", MUSIC_BY, "hans_zimmer"), T("hans_zimmer", NATIONALITY, COUNTRY_EID["de"])], "bridge",
      [("Who composed the music for Inception?", "Hans Zimmer"), ("What is Hans Zimmer's nationality?", "German")])
    Q("In what year was Christopher Nolan's brother born?",
      [T("christopher_nolan", SIBLING, "jonathan_nolan"), T("jonathan_nolan", BIRTH_YEAR, "year_1976")], "bridge",
      [("Who is Christopher Nolan's brother?", "Jonathan Nolan"), ("When was Jonathan Nolan born?", "1976")])
    Q("Who directed the Norwegian film that Christopher Nolan's Insomnia is a remake of?",
      [T("insomnia_2002", REMAKE_OF, "insomnia_1997"), T("insomnia_1997", DIRECTED_BY, "erik_skjoldbjaerg")], "bridge",
      [("Which film is Insomnia (2002) a remake of?", "Insomnia (1997)"), ("Who directed Insomnia (1997)?", "Erik Skjoldbjærg")])
    Q("Who directed the film that A Fistful of Dollars was based on?",
      [T("a_fistful_of_dollars", REMAKE_OF, "yojimbo"), T("yojimbo", DIRECTED_BY, "akira_kurosawa")], "bridge",
      [("Which film does A Fistful of Dollars closely follow?", "Yojimbo"), ("Who directed Yojimbo?", "Akira Kurosawa")])
    Q("Which studio produced the Japanese film that The Magnificent Seven (1960) was remade from?",
      [T("the_magnificent_seven", REMAKE_OF, "seven_samurai"), T("seven_samurai", PRODUCED_BY, "toho")], "bridge",
      [("Which film was The Magnificent Seven remade from?", "Seven Samurai"), ("Which studio produced Seven Samurai?", "Toho")])
    Q("Where was the composer of The Good, the Bad and the Ugly born?",
      [T("the_good_the_bad_and_the_ugly", MUSIC_BY, "ennio_morricone"), T("ennio_morricone", BIRTHPLACE, "rome")], "bridge",
      [("Who composed the music for The Good, the Bad and the Ugly?", "Ennio Morricone"), ("Where was Ennio Morricone born?", "Rome")])
    Q("In which city was the director of Pan's Labyrinth born?",
      [T("pans_labyrinth", DIRECTED_BY, "guillermo_del_toro"), T("guillermo_del_toro", BIRTHPLACE, "guadalajara_mx")], "bridge",
      [("Who directed Pan's Labyrinth?", "Guillermo del Toro"), ("Where was Guillermo del Toro born?", "Guadalajara")],
      extra_aliases=["Guadalajara, Jalisco", "Guadalajara, Mexico"])
    Q("Which film won the Palme d'Or at the 1994 Cannes Film Festival?",
      [T("palme_dor", CATEGORY_WINNERS, W("palme_dor", 1994, "pulp_fiction")),
       T(W("palme_dor", 1994, "pulp_fiction"), HONOR_FOR, "pulp_fiction")], "bridge",
      [("Which award record is the 1994 Palme d'Or?", "the Palme d'Or awarded at Cannes in 1994"), ("Which film received it?", "Pulp Fiction")])
    Q("Who composed the music for the film Hayao Miyazaki released in 2001?",
      [T("hayao_miyazaki", FILMS_DIRECTED, "spirited_away"), T("spirited_away", MUSIC_BY, "joe_hisaishi")], "bridge",
      [("Which film did Hayao Miyazaki release in 2001?", "Spirited Away"), ("Who composed the music for Spirited Away?", "Joe Hisaishi")])
    Q("Which country is the director of the 2019 film Parasite from?",
      [T("parasite_2019", DIRECTED_BY, "bong_joon_ho"), T("bong_joon_ho", NATIONALITY, COUNTRY_EID["kr"])], "bridge",
      [("Who directed Parasite (2019)?", "Bong Joon-ho"), ("What is Bong Joon-ho's nationality?", "South Korean")])
    Q("Where was the director of Jaws born?",
      [T("jaws", DIRECTED_BY, "steven_spielberg"), T("steven_spielberg", BIRTHPLACE, "cincinnati")], "bridge",
      [("Who directed Jaws?", "Steven Spielberg"), ("Where was Steven Spielberg born?", "Cincinnati")])
    Q("Who played the Joker in The Dark Knight?",
      [T("the_dark_knight", PERFORMANCES, PF("the_dark_knight", "heath_ledger")),
       T(PF("the_dark_knight", "heath_ledger"), PERF_ACTOR, "heath_ledger")], "bridge",
      [("Which performance in The Dark Knight is the role of the Joker?", "the performance as the Joker"), ("Which actor gave that performance?", "Heath Ledger")])

    # ---- three hops -------------------------------------------------------
    Q("In which country was the director of Inception born?",
      [T("inception", DIRECTED_BY, "christopher_nolan"), T("christopher_nolan", BIRTHPLACE, "london"),
       T("london", CITY_COUNTRY, COUNTRY_EID["uk"])], "bridge",
      [("Who directed Inception?", "Christopher Nolan"), ("Where was Christopher Nolan born?", "London"),
       ("Which country is London in?", "United Kingdom")], extra_aliases=["England"])
    Q("In which country is the headquarters of the studio that produced Spirited Away?",
      [T("spirited_away", PRODUCED_BY, "studio_ghibli"), T("studio_ghibli", HQ_CITY, "koganei"),
       T("koganei", CITY_COUNTRY, COUNTRY_EID["jp"])], "bridge",
      [("Which studio produced Spirited Away?", "Studio Ghibli"), ("Where is Studio Ghibli headquartered?", "Koganei"),
       ("Which country is Koganei in?", "Japan")])
    rec = W(BSA, 2009, "the_dark_knight")
    Q("Who directed the film for which Heath Ledger won an Academy Award?",
      [T("heath_ledger", WINNER_AWARDS, rec), T(rec, HONOR_FOR, "the_dark_knight"),
       T("the_dark_knight", DIRECTED_BY, "christopher_nolan")], "bridge",
      [("For which film did Heath Ledger win an Academy Award?", "The Dark Knight"),
       ("Who directed The Dark Knight?", "Christopher Nolan")])
    rec = W("palme_dor", 1994, "pulp_fiction")
    Q("Who directed the film that won the Palme d'Or at the 1994 Cannes Film Festival?",
      [T("palme_dor", CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "pulp_fiction"),
       T("pulp_fiction", DIRECTED_BY, "quentin_tarantino")], "bridge",
      [("Which film won the 1994 Palme d'Or?", "Pulp Fiction"), ("Who directed Pulp Fiction?", "Quentin Tarantino")])
    Q("In which country was the composer of the 2021 film Dune born?",
      [T("dune_2021", MUSIC_BY, "hans_zimmer"), T("hans_zimmer", BIRTHPLACE, "frankfurt"),
       T("frankfurt", CITY_COUNTRY, COUNTRY_EID["de"])], "bridge",
      [("Who composed the music for Dune (2021)?", "Hans Zimmer"), ("Where was Hans Zimmer born?", "Frankfurt am Main"),
       ("Which country is Frankfurt am Main in?", "Germany")])
    Q("In which country was the director of the 1997 film Titanic born?",
      [T("titanic_1997", DIRECTED_BY, "james_cameron"), T("james_cameron", BIRTHPLACE, "kapuskasing"),
       T("kapuskasing", CITY_COUNTRY, COUNTRY_EID["ca"])], "bridge",
      [("Who directed Titanic (1997)?", "James Cameron"), ("Where was James Cameron born?", "Kapuskasing"),
       ("Which country is Kapuskasing in?", "Canada")])
    perf = PF("the_dark_knight", "heath_ledger")
    Q("In which city was the actor who played the Joker in The Dark Knight born?",
      [T("the_dark_knight", PERFORMANCES, perf), T(perf, PERF_ACTOR, "heath_ledger"),
       T("heath_ledger", BIRTHPLACE, "perth_au")], "bridge",
      [("Who played the Joker in The Dark Knight?", "Heath Ledger"), ("Where was Heath Ledger born?", "Perth")],
      extra_aliases=["Perth, Australia"])
    Q("In which country was the director of The Shape of Water born?",
      [T("the_shape_of_water", DIRECTED_BY, "guillermo_del_toro"), T("guillermo_del_toro", BIRTHPLACE, "guadalajara_mx"),
       T("guadalajara_mx", CITY_COUNTRY, COUNTRY_EID["mx"])], "bridge",
      [("Who directed The Shape of Water?", "Guillermo del Toro"), ("Where was Guillermo del Toro born?", "Guadalajara"),
       ("Which country is that Guadalajara in?", "Mexico")])
    rec = W(ANIM, 2003, "spirited_away")
    Q("Which studio made the film that won the Academy Award for Best Animated Feature at the 2003 ceremony?",
      [T(ANIM, CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "spirited_away"), T("spirited_away", PRODUCED_BY, "studio_ghibli")],
      "bridge",
      [("Which film won Best Animated Feature at the 2003 Academy Awards?", "Spirited Away"),
       ("Which studio made Spirited Away?", "Studio Ghibli")])
    rec = W(SCORE, 2024, "oppenheimer")
    Q("Where was the composer born who won the Academy Award for Best Original Score at the 2024 ceremony?",
      [T(SCORE, CATEGORY_WINNERS, rec), T(rec, HONOR_WINNER, "ludwig_goransson"),
       T("ludwig_goransson", BIRTHPLACE, "linkoping")], "bridge",
      [("Who won Best Original Score at the 2024 Academy Awards?", "Ludwig Göransson"),
       ("Where was Ludwig Göransson born?", "Linköping")])
    rec = W(BP, 2024, "oppenheimer")
    Q("Which studio released the film that won Best Picture at the 2024 Academy Awards ceremony?",
      [T(BP, CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "oppenheimer"), T("oppenheimer", PRODUCED_BY, "universal_pictures")],
      "bridge",
      [("Which film won Best Picture at the 2024 Academy Awards?", "Oppenheimer"),
       ("Which studio released Oppenheimer?", "Universal Pictures")])
    Q("Where was the brother of the director of Top Gun born?",
      [T("top_gun", DIRECTED_BY, "tony_scott"), T("tony_scott", SIBLING, "ridley_scott"),
       T("ridley_scott", BIRTHPLACE, "south_shields")], "bridge",
      [("Who directed Top Gun?", "Tony Scott"), ("Who is Tony Scott's brother?", "Ridley Scott"),
       ("Where was Ridley Scott born?", "South Shields")])

    # ---- four hops --------------------------------------------------------
    rec = W("golden_lion", 2018, "roma_2018")
    Q("In which city was the director of the film that won the Golden Lion at the 2018 Venice Film Festival born?",
      [T("golden_lion", CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "roma_2018"), T("roma_2018", DIRECTED_BY, "alfonso_cuaron"),
       T("alfonso_cuaron", BIRTHPLACE, "mexico_city")], "bridge",
      [("Which film won the Golden Lion in 2018?", "Roma"), ("Who directed Roma (2018)?", "Alfonso Cuarón"),
       ("Where was Alfonso Cuarón born?", "Mexico City")])
    rec = W(BSA, 2009, "the_dark_knight")
    Q("In which city is the headquarters of the studio that released the film for which Heath Ledger won his Academy Award?",
      [T("heath_ledger", WINNER_AWARDS, rec), T(rec, HONOR_FOR, "the_dark_knight"),
       T("the_dark_knight", PRODUCED_BY, "warner_bros"), T("warner_bros", HQ_CITY, "burbank")], "bridge",
      [("For which film did Heath Ledger win an Academy Award?", "The Dark Knight"),
       ("Which studio released The Dark Knight?", "Warner Bros."), ("Where is Warner Bros. headquartered?", "Burbank")],
      extra_aliases=["Burbank, California"])
    Q("In which country was the brother of the director of Top Gun born?",
      [T("top_gun", DIRECTED_BY, "tony_scott"), T("tony_scott", SIBLING, "ridley_scott"),
       T("ridley_scott", BIRTHPLACE, "south_shields"), T("south_shields", CITY_COUNTRY, COUNTRY_EID["uk"])], "bridge",
      [("Who directed Top Gun?", "Tony Scott"), ("Who is Tony Scott's brother?", "Ridley Scott"),
       ("Where was Ridley Scott born?", "South Shields"), ("Which country is South Shields in?", "United Kingdom")],
      extra_aliases=["England"])
    Q("In which country was the composer of the western that remade Seven Samurai born?",
      [T("seven_samurai", REMADE_AS, "the_magnificent_seven"), T("the_magnificent_seven", MUSIC_BY, "elmer_bernstein"),
       T("elmer_bernstein", BIRTHPLACE, "new_york_city"), T("new_york_city", CITY_COUNTRY, COUNTRY_EID["us"])], "bridge",
      [("Which western remade Seven Samurai?", "The Magnificent Seven"),
       ("Who composed the music for The Magnificent Seven?", "Elmer Bernstein"),
       ("Where was Elmer Bernstein born?", "New York City"), ("Which country is New York City in?", "United States")])
    rec = W(BP, 2020, "parasite_2019")
    Q("In which city was the director of the film that won Best Picture at the 2020 Academy Awards ceremony born?",
      [T(BP, CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "parasite_2019"), T("parasite_2019", DIRECTED_BY, "bong_joon_ho"),
       T("bong_joon_ho", BIRTHPLACE, "daegu")], "bridge",
      [("Which film won Best Picture at the 2020 Academy Awards?", "Parasite"), ("Who directed Parasite?", "Bong Joon-ho"),
       ("Where was Bong Joon-ho born?", "Daegu")])
    rec = W(BA, 2024, "oppenheimer")
    Q("Where was the composer of the film for which Cillian Murphy won the Academy Award for Best Actor born?",
      [T("cillian_murphy", WINNER_AWARDS, rec), T(rec, HONOR_FOR, "oppenheimer"),
       T("oppenheimer", MUSIC_BY, "ludwig_goransson"), T("ludwig_goransson", BIRTHPLACE, "linkoping")], "bridge",
      [("For which film did Cillian Murphy win Best Actor?", "Oppenheimer"),
       ("Who composed the music for Oppenheimer?", "Ludwig Göransson"), ("Where was Ludwig Göransson born?", "Linköping")])
    rec = W(ANIM, 2003, "spirited_away")
    Q("In which city was the director of the film that won Best Animated Feature at the 2003 Academy Awards born?",
      [T(ANIM, CATEGORY_WINNERS, rec), T(rec, HONOR_FOR, "spirited_away"), T("spirited_away", DIRECTED_BY, "hayao_miyazaki"),
       T("hayao_miyazaki", BIRTHPLACE, "tokyo")], "bridge",
      [("Which film won Best Animated Feature at the 2003 Academy Awards?", "Spirited Away"),
       ("Who directed Spirited Away?", "Hayao Miyazaki"), ("Where was Hayao Miyazaki born?", "Tokyo")])

    # ---- comparison -------------------------------------------------------
    QC("Which film was released first, Inception or Interstellar?",
       [T("inception", RELEASE_YEAR, "year_2010"), T("interstellar", RELEASE_YEAR, "year_2014")], "inception",
       [("When was Inception released?", "2010"), ("When was Interstellar released?", "2014")])
    QC("Which came out earlier, Jaws or Star Wars?",
       [T("jaws", RELEASE_YEAR, "year_1975"), T("star_wars", RELEASE_YEAR, "year_1977")], "jaws",
       [("When was Jaws released?", "1975"), ("When was Star Wars released?", "1977")])
    QC("Which was released first, Spirited Away or Princess Mononoke?",
       [T("spirited_away", RELEASE_YEAR, "year_2001"), T("princess_mononoke", RELEASE_YEAR, "year_1997")], "princess_mononoke",
       [("When was Spirited Away released?", "2001"), ("When was Princess Mononoke released?", "1997")])
    QC("Who was born first, Christopher Nolan or Denis Villeneuve?",
       [T("christopher_nolan", BIRTH_YEAR, "year_1970"), T("denis_villeneuve", BIRTH_YEAR, "year_1967")], "denis_villeneuve",
       [("When was Christopher Nolan born?", "1970"), ("When was Denis Villeneuve born?", "1967")])
    QC("Which film was released later, James Cameron's Titanic or Avatar?",
       [T("titanic_1997", RELEASE_YEAR, "year_1997"), T("avatar", RELEASE_YEAR, "year_2009")], "avatar",
       [("When was Titanic (1997) released?", "1997"), ("When was Avatar released?", "2009")])
    QC("Who was born earlier, Hayao Miyazaki or Isao Takahata?",
       [T("hayao_miyazaki", BIRTH_YEAR, "year_1941"), T("isao_takahata", BIRTH_YEAR, "year_1935")], "isao_takahata",
       [("When was Hayao Miyazaki born?", "1941"), ("When was Isao Takahata born?", "1935")])
    QC("Which film came out first, Rashomon or Seven Samurai?",
       [T("rashomon", RELEASE_YEAR, "year_1950"), T("seven_samurai", RELEASE_YEAR, "year_1954")], "rashomon",
       [("When was Rashomon released?", "1950"), ("When was Seven Samurai released?", "1954")])
    QC("Which film was released first, Blade Runner or David Lynch's Dune?",
       [T("blade_runner", RELEASE_YEAR, "year_1982"), T("dune_1984", RELEASE_YEAR, "year_1984")], "blade_runner",
       [("When was Blade Runner released?", "1982"), ("When was Dune (1984) released?", "1984")])

    # ---- unanswerable -------------------------------------------------------
    QU("Who directed The Matrix?", [], 1, "The Matrix is not part of this world.")
    QU("Where was Peter Jackson born?", ["peter_jackson"], 1, "Peter Jackson's birthplace is not recorded in this world.")
    QU("Which studio produced Christopher Nolan's 1998 film Following?", ["following"], 1,
       "No studio is recorded for Following.")
    QU("Which film won the Academy Award for Best Picture at the 2030 ceremony?", ["academy_award_best_picture"], 2,
       "No 2030 ceremony is recorded.")
    QU("Who composed the score for the 2027 film The Glass Orchard?", [], 1, "The Glass Orchard is a fictional title not in this world.")
    QU("What was the production budget of Inception?", ["inception"], 1, "Budgets are not recorded in this world.")
    QU("In which city was Steve Jobs born?", [], 1, "Steve Jobs is only mentioned in passing and has no recorded birthplace.")

    for i, q in enumerate(QUESTIONS, 1):
        q["id"] = f"q{i:03d}"
        q["gold_titles"] = gold_titles(q["gold_path"])


def gold_titles(path):
    out = []
    for h, r, t in path:
        for x in (h, t):
            if x in TITLE and TITLE[x] not in out:
                out.append(TITLE[x])
    return out


# ---------------------------------------------------------------------------
# consistency checks
# ---------------------------------------------------------------------------
def names_of(x):
    e = ENT[x]
    return [e["name"]] + list(e["aliases"])


def mentions(text, x):
    low = text.lower()
    return any(n.lower() in low for n in names_of(x))


def check():
    errors = []
    ptext = {p["entity"]: p["text"] for p in PASSAGES}
    by_title = {p["title"]: p["text"] for p in PASSAGES}
    for h, r, t in TRIPLES:
        if h not in ENT or t not in ENT:
            errors.append(f"dangling triple {h} {r} {t}")
    # every fact on a gold path must be stated in the passages of its end points
    for q in QUESTIONS:
        path = q["gold_path"]
        for tr in path:
            if tuple(tr) not in TRIPLE_SET:
                errors.append(f"{q['id']}: missing triple {tr}")
        # collapse mediator hops into entity-to-entity facts
        facts, pending = [], None
        for h, r, t in path:
            if ENT[t]["type"] in MEDIATOR_TYPES:
                pending = h
                continue
            if ENT[h]["type"] in MEDIATOR_TYPES:
                facts.append((pending, t))
                pending = None
            else:
                facts.append((h, t))
        for h, t in facts:
            ok = False
            if h is None:
                ok = True
            elif ENT[t]["type"] == "year":
                ok = ENT[t]["name"] in ptext.get(h, "")
            else:
                ok = (h in ptext and mentions(ptext[h], t)) or (t in ptext and mentions(ptext[t], h))
            if not ok:
                errors.append(f"{q['id']}: fact {h} -> {t} not stated in passages")
        if q["answerable"]:
            texts = [by_title[t] for t in q["gold_titles"]]
            cands = q["answers"] + q["aliases"]
            if not any(c.lower() in x.lower() for c in cands for x in texts):
                errors.append(f"{q['id']}: answer not found in gold passages")
    # unanswerable questions must really be unanswerable from the KG
    if any(h == "m.peter_jackson" and r == BIRTHPLACE for h, r, t in TRIPLES):
        errors.append("Peter Jackson has a birthplace")
    if any(h == "m.following" and r == PRODUCED_BY for h, r, t in TRIPLES):
        errors.append("Following has a studio")
    for p in PASSAGES:
        low = p["text"].lower()
        if p["entity"] == "m.peter_jackson" and (re.search(r"born in (?!\d)", low) or "wellington" in low):
            errors.append("Peter Jackson passage mentions a birthplace")
        if "matrix" in low and "directed" in low and "matrix" in p["title"].lower():
            errors.append("The Matrix is described")
        if "budget" in low and p["entity"] == "m.inception":
            errors.append("Inception budget mentioned")
    if errors:
        for e in errors:
            print("ERROR:", e, file=sys.stderr)
        raise SystemExit(1)


def write_jsonl(name, rows):
    with open(OUT_DIR / name, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


# The fixed split: anything a method fits (FRAG's router, PAR-RAG's exemplars, CRP-RAG's
# tau_ppl) is fitted on "train" and reported on "test". Questions are ordered by shape
# (type, hops) and a hash of their id, then dealt out 4 train : 1 dev : 5 test per ten, so
# every shape lands in train and test.
SPLIT_PATTERN = ["test", "train", "test", "train", "dev", "test", "train", "test", "train", "test"]


def assign_splits():
    order = sorted(QUESTIONS, key=lambda q: (q["type"], q["hops"],
                                             hashlib.sha256(q["id"].encode()).hexdigest()))
    for i, q in enumerate(order):
        q["split"] = SPLIT_PATTERN[i % len(SPLIT_PATTERN)]


# One-click starts on Home: one question of each shape, easiest first.
DEMO_PICKS = ["q001", "q014", "q029", "q048", "q041", "q025", "q053", "q056"]


def main():
    build_graph()
    index_awards()
    build_passages()
    build_questions()
    assign_splits()
    check()
    write_jsonl("passages.jsonl", [{"id": p["id"], "title": p["title"], "text": p["text"]} for p in PASSAGES])
    write_jsonl("entities.jsonl", [ENT[k] for k in ENT])
    write_jsonl("triples.jsonl", [{"head": h, "relation": r, "tail": t} for h, r, t in TRIPLES])
    for q in QUESTIONS:
        if q["id"] in DEMO_PICKS:
            q["meta"] = {"demo": True}
    keys = ["id", "question", "answers", "aliases", "hops", "type", "answerable", "split", "topic_entities",
            "decomposition", "gold_titles", "gold_path", "answer_entities", "note", "meta"]
    write_jsonl("questions.jsonl", [{k: q[k] for k in keys if k in q} for q in QUESTIONS])
    types = defaultdict(int)
    for e in ENT.values():
        types[e["type"]] += 1
    hops = defaultdict(int)
    qtypes = defaultdict(int)
    for q in QUESTIONS:
        hops[q["hops"]] += 1
        qtypes[q["type"]] += 1
    print(f"passages={len(PASSAGES)} entities={len(ENT)} triples={len(TRIPLES)} questions={len(QUESTIONS)}")
    print("entity types:", dict(sorted(types.items())))
    print("question types:", dict(qtypes), "hops:", dict(sorted(hops.items())))
    splits = defaultdict(int)
    for q in QUESTIONS:
        splits[q["split"]] += 1
    print("splits:", dict(sorted(splits.items())))


if __name__ == "__main__":
    main()
