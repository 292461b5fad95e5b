"""``orange sync``: sharing tasks with a team through any git remote (DESIGN §7).

`remote` speaks to git (fetch, push, the fetch refspec, the default remote); `sync`
fetches, brings the remote's tip in (`orange.store.integrate`, with the merge of
`orange.engine.merging`) and pushes, retrying a push that lost a race.  What arrives
is data: nothing here runs a hook.
"""
