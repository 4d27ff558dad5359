-- wrk script: POST the 1.8 KB submission (written by submission-1.8kb.py to body.json).
local f = io.open(os.getenv("BODY") or "body.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-key"
