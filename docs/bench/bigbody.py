#!/usr/bin/env python3
# Node CPU to store messages with one large JSON body, template version 2
# (text field: path + the body's first 64 KiB, excluded from _source) against
# the texts indexed in place (the whole body), alternating.
# usage: docs/bench/bigbody.py URL JVM_PID BODY_BYTES ROUNDS (JVM_PID: the node's java process, for its CPU)
import json, random, sys, time, urllib.request, os
E, pid, size, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
here = os.path.dirname(os.path.abspath(__file__))
cur = json.load(open(os.path.join(here, '../../adapters/elastic/mappings.json')))
v2 = json.loads(json.dumps(cur))
v2['_source'] = {'excludes': ['text']}
v2['properties']['path'] = {'type': 'keyword'}
for s in ('request', 'response'):
    v2['properties'][s] = {'type': 'object', 'enabled': False}
def req(method, path, body=None, ctype='application/json'):
    r = urllib.request.Request(E + path, data=body, method=method, headers={'Content-Type': ctype})
    return urllib.request.urlopen(r).read()
def ticks():
    f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return int(f[11]) + int(f[12])
words = 'order customer item price quantity total currency address city country street zip status pending shipped delivered token session user account plan coupon discount created updated id name email phone description category tag warehouse carrier tracking'.split()
rng = random.Random(1)
def body():
    parts, n = [], 0
    while n < size:
        p = '"%s_%d":"%s %s %d"' % (rng.choice(words), rng.randrange(100), rng.choice(words), rng.choice(words), rng.randrange(10**6))
        parts.append(p); n += len(p) + 1
    return '{' + ','.join(parts) + '}'
for name, m in (('v2', v2), ('inplace', cur)):
    try: req('DELETE', '/bigbody-' + name)
    except Exception: pass
    req('PUT', '/bigbody-' + name, json.dumps({'settings': {'number_of_shards': 1, 'number_of_replicas': 0}, 'mappings': m}).encode())
seq = 0
def bulk(name, n=4):
    global seq
    lines = []
    for _ in range(n):
        seq += 1
        b = body()
        doc = {'id': 'm%d' % seq, 'path': '/v1/orders/%d' % seq, 'status_code': 200,
               'request': {'header': [], 'body': '', 'content_type': 'application/json', 'size': 0},
               'response': {'header': [], 'body': b, 'content_type': 'application/json', 'size': len(b)}}
        if name == 'v2':
            doc['text'] = [doc['path'], b[:65536]]
        lines += [json.dumps({'create': {'_index': 'bigbody-' + name}}), json.dumps(doc)]
    data = ('\n'.join(lines) + '\n').encode()
    t0, c0 = time.time(), ticks()
    out = json.loads(req('POST', '/_bulk?refresh=true&filter_path=errors', data, 'application/x-ndjson'))
    assert not out['errors'], out
    return time.time() - t0, (ticks() - c0) * 10 / n
bulk('v2'); bulk('inplace')
tot = {'v2': [0, 0], 'inplace': [0, 0]}
for r in range(rounds):
    for name in ('v2', 'inplace'):
        w, c = bulk(name)
        tot[name][0] += w; tot[name][1] += c
        print(f'round {r+1} {name}: {w*1000/4:.0f} ms wall, {c:.0f} ms node CPU per message')
for name in tot:
    print(f'{name}: mean {tot[name][1]/rounds:.0f} ms node CPU per message of {size} body bytes')
print(f'ratio in place / v2: {tot["inplace"][1]/tot["v2"][1]:.2f}')
for name in tot: req('DELETE', '/bigbody-' + name)
