-- A dynamic request: every call builds a new request for the next path,
-- /item/1, /item/2, ...  Used by bench/script.py (issue 4) to measure what a
-- request() hook costs per request; the counter is per thread (each thread
-- has its own Lua state), so with -t1 the paths are numbered 1, 2, 3, ...
counter = 0

function request()
   counter = counter + 1
   return wrk.format(nil, "/item/" .. counter)
end
