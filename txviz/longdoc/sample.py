"""A sample document for the Long Documents page: a few paragraphs with a fact planted early and
asked for at the end, so retrieval across the text shows in the maps."""

SAMPLE = """The lighthouse on Skerry Point was built in 1821 by a stonemason named Elias Varrow. He chose granite from the quarry at Dunmore because it did not crack in the winter frost. The tower stood forty metres high, and its lamp burned whale oil for the first thirty years.

The first keeper, Margaret Doyle, kept a logbook of every ship that passed. She wrote down the weather, the height of the waves and the colour of the sky at dusk. Her entries are short and careful. On stormy nights she climbed the stairs every hour to trim the wick and clean the soot from the glass. The secret word she used to signal the harbour master was "heliotrope".

In 1854 the oil lamp was replaced by a paraffin burner with a larger lens. The new lens came from a workshop in Paris and weighed almost two tonnes. It floated on a bath of mercury so that one person could turn it by hand. Ships could now see the light from thirty kilometres away, and the number of wrecks on the reef fell sharply.

Life at the point was hard. Supplies arrived by boat once a month, when the sea allowed. The keepers grew potatoes and cabbages in a walled garden behind the tower, and they kept goats for milk. Children of the keepers walked six kilometres to the village school, along a cliff path that was often closed by snow.

During the war the light was dimmed and then switched off, so that it could not guide enemy ships. A small team of soldiers lived in the keeper's cottage and watched the sea with binoculars. When peace came, the lamp was lit again on a clear night in May, and people from the village walked out to the cliffs to watch it.

In 1962 the light was electrified, and in 1989 it became fully automatic. The last keeper left the island in a small boat, carrying the logbooks with him. Today the tower is a museum. Visitors can climb the one hundred and twelve steps, read Margaret Doyle's careful entries, and look out over the reef where so many ships were lost.

A question for the reader: what was the secret word the first keeper used to signal the harbour master? The word was"""
