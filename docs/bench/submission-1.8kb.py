import json, time
rh = {"Authorization": "Bearer sk_live_0123456789abcdef", "Accept": "application/json",
 "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "X-Request-Id": "9f1c2a7e-4b1d-4c55-9a8e-3e2f1d0c9b8a",
 "Accept-Encoding": "gzip, br", "Content-Type": "application/json", "Cookie": "session=abc; theme=dark"}
sh = {"Content-Type": "application/json; charset=utf-8", "Date": "Fri, 14 Mar 2025 12:00:00 GMT",
 "Server": "envoy", "Vary": "Accept-Encoding", "X-Ratelimit-Remaining": 998, "Set-Cookie": ["session=def; HttpOnly"]}
items = [{"sku": "SKU-%05d" % i, "name": "standard item", "qty": i, "price": 12.5 + i} for i in range(12)]
rb = json.dumps({"id": 4711, "status": "shipped", "customer": {"email": "ada@example.com", "token": "tok_abc"}, "items": items}, separators=(",", ":"))
s = {"name": "shop-frontend", "created_at": int(time.time()) - 60, "ip_address": "203.0.113.9", "method": "post",
 "path": "/v1/orders?page=2", "duration_ms": 12.345,
 "request": {"header": rh, "body": '{"sku":42,"qty":1,"password":"hunter2"}'},
 "response": {"status_code": 201, "header": sh, "body": rb}}
print(json.dumps(s, separators=(",", ":")), end="")
